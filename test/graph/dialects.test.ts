import { describe, expect, it } from "vitest";
import { parseGraph } from "../../src/graph/load.ts";

describe("isolation inheritance", () => {
  it("resolves per field, child winning: graph -> workstream -> task -> agent", () => {
    const graph = parseGraph(
      "i.yaml",
      `name: g
isolation: {sandbox: oci, token_tier: read_only, image: base:1}
workstreams:
  - id: w
    isolation: {token_tier: STANDARD}
tasks:
  - id: a
    workstream_id: w
    description: x
    isolation: {runtime: podman}
    primary_agent: {isolation: {token_tier: elevated}}
    review: {agent: {isolation: {image: review:2}}}
`,
    );
    const task = graph.tasks[0]!;
    expect(task.primaryAgent.isolation).toEqual({
      sandbox: "oci",
      tokenTier: "elevated",
      image: "base:1",
      runtime: "podman",
    });
    expect(task.review!.agent.isolation).toEqual({
      sandbox: "oci",
      tokenTier: "standard",
      image: "review:2",
      runtime: "podman",
    });
    expect(task.review!.reviewOnAttempt).toBe(1);
  });

  it("gives no isolation when none is set anywhere", () => {
    const graph = parseGraph("i.yaml", "name: g\ntasks:\n  - id: a\n    description: x\n");
    expect(graph.tasks[0]!.primaryAgent.isolation).toEqual({
      sandbox: "none",
      tokenTier: "standard",
      image: null,
      runtime: null,
    });
  });

  it("expands the paths sugar into tagged paths: src, then test, then spec", () => {
    const graph = parseGraph(
      "p.yaml",
      "name: g\ntasks:\n  - id: a\n    description: x\n    paths: {spec: s.md, test: [t.py], src: [a.py, b.py]}\n",
    );
    expect(graph.tasks[0]!.taggedPaths.map((p) => `${p.category}:${p.path}`)).toEqual([
      "src:a.py",
      "src:b.py",
      "test:t.py",
      "spec:s.md",
    ]);
  });

  it("accepts roles and enums by value or enum name, case-insensitively", () => {
    const graph = parseGraph(
      "r.yaml",
      "name: g\ntasks:\n  - id: a\n    role: Test_Writer\n    isolation: {sandbox: OCI}\n",
    );
    expect(graph.tasks[0]!.role).toBe("test_writer");
    expect(graph.tasks[0]!.primaryAgent.isolation.sandbox).toBe("oci");
  });
});

describe("cyberian compilation", () => {
  it("keeps the written order of numeric subtask keys and joins paths with dots", () => {
    const graph = parseGraph(
      "w.yaml",
      `name: w
instructions: Prepare.
subtasks:
  "2":
    instructions: second in the file
    subtasks:
      "10": {instructions: nested}
  "1":
    instructions: third in the file
`,
    );
    expect(graph.tasks.map((t) => t.id)).toEqual(["root", "2", "2.10", "1"]);
    expect(graph.tasks.map((t) => t.dependencies)).toEqual([[], ["root"], ["2"], ["2.10"]]);
  });

  it("uses the file name when the workflow has no name, and reads the root's lifecycle", () => {
    const graph = parseGraph(
      "flows/my-flow.yaml",
      "agent_lifecycle: REFRESH\nsubtasks:\n  s: {instructions: hi}\n",
    );
    expect(graph.name).toBe("my-flow");
    expect(graph.cyberian!.agentLifecycle).toBe("refresh");
  });
});
