import { describe, expect, it } from "vitest";
import { parseGraph } from "../../src/graph/load.ts";
import { completionStatus, cyberianPrompt } from "../../src/protocol/cyberian-prompt.ts";
import {
  renderInstructions,
  renderManifest,
  renderPolicies,
  resolveInputFiles,
} from "../../src/protocol/render.ts";
import { graphOf } from "../support/graphs.ts";

const headings = (md: string) =>
  md
    .split("\n")
    .filter((l) => l.startsWith("## "))
    .map((l) => l.slice(3));

const pipeline = parseGraph(
  "p.yaml",
  `name: pipe
tools: [pixi]
isolation: {sandbox: oci}
tasks:
  - id: spec
    role: spec_writer
    description: Write stubs.
    paths: {src: [src/q.py], spec: specs/q.md}
  - id: impl
    role: IMPLEMENTER
    description: Implement it.
    dependencies: [spec]
    completion_gate: pytest -q
    max_gate_attempts: 3
    inputs_from: {task: spec, category: src}
    primary_agent: {adr_verbosity: detailed, model: claude-opus}
    review: {agent: {model: claude-haiku}, review_on_attempt: 2}
`,
);
const [spec, impl] = pipeline.tasks as [
  NonNullable<(typeof pipeline.tasks)[0]>,
  NonNullable<(typeof pipeline.tasks)[0]>,
];
const base = { graph: pipeline, repoDir: "/repo", workDir: "/work", inputFiles: [] };

describe("instructions.md", () => {
  it("has agentrelay's sections in order, conditional ones included when they apply", () => {
    const inputs = resolveInputFiles(impl, () => ({
      schema_version: "1",
      files: [
        { path: "src/q.py", action: "created", category: "src" },
        { path: "specs/q.md", action: "created", category: "spec" },
      ],
    }));
    const md = renderInstructions({ ...base, task: impl, attempt: 2, inputFiles: inputs });
    expect(md.startsWith("# Instructions for Task impl\n")).toBe(true);
    expect(headings(md)).toEqual([
      "Role",
      "Working Directory",
      "Tools",
      "What to Do",
      "Input Files",
      "Graph Awareness",
      "Previous Attempts",
      "Architecture Decision Record",
      "Isolation Boundary",
      "Submitting Your Work",
      "Task Details",
    ]);
    expect(md).toContain("### From task spec\n- `src/q.py` (category: src)");
    expect(md).not.toContain("specs/q.md` (category: spec)");
    expect(md).toContain("`/work/attempts/1/`");
    expect(md).toContain("Alternatives Considered");
    expect(md).toContain("`docs/adr/impl.md`");
  });

  it("omits conditional sections for a plain generic first attempt", () => {
    const graph = graphOf([{ id: "solo" }]);
    const md = renderInstructions({ ...base, graph, task: graph.tasks[0]!, attempt: 1 });
    expect(headings(md)).toEqual([
      "Role",
      "Working Directory",
      "What to Do",
      "Graph Awareness",
      "Submitting Your Work",
    ]);
    expect(md).toContain("do solo");
    expect(md).toContain("agentrelay-complete-no-pr");
  });

  it("fills role templates with paths by category", () => {
    const md = renderInstructions({ ...base, task: spec, attempt: 1 });
    expect(md).toContain("- spec: specs/q.md\n- src: src/q.py");
    expect(md).toContain("raises `NotImplementedError`");
  });
});

describe("manifest.json and policies.json", () => {
  it("match agentrelay's schema_version 1 shapes", () => {
    const ctx = {
      ...base,
      task: impl,
      attempt: 1,
      inputFiles: [{ path: "src/q.py", category: "src", sourceTask: "spec" }],
    };
    expect(renderManifest(ctx)).toEqual({
      schema_version: "1",
      task: { id: "impl", role: "implementer", description: "Implement it." },
      paths: [],
      workspace: {
        branch_name: "agentrelay/pipe/impl",
        integration_branch: "agentrelay/pipe/default/integration",
      },
      execution: { attempt_num: 0, graph_name: "pipe" },
      dependencies: { spec: { description: "Write stubs." } },
      input_files: [{ path: "src/q.py", category: "src", source_task: "spec" }],
      tools: ["pixi"],
    });
    expect(renderPolicies(ctx)).toMatchObject({
      completion_gate: { command: "pytest -q", max_attempts: 3, output_file: "gate_last_output.txt" },
      review: { model: "claude-haiku", review_on_attempt: 2 },
      adr: { verbosity: "detailed" },
      verification: null,
    });
    expect(renderPolicies({ ...ctx, task: spec })).toMatchObject({
      completion_gate: null,
      review: null,
      adr: null,
    });
  });
});

describe("cyberian prompts", () => {
  const workflow = parseGraph(
    "w.yaml",
    `name: w
params:
  n: {range: integer, required: true}
system_instructions: "Mode {{ n }}."
subtasks:
  grow:
    instructions: "Add {{ n // 2 }} to the file."
    loop_until: {status: ENOUGH, message: "When the file is long enough, say ENOUGH."}
    success_criteria:
      python: "result = True"
      retry_message: "It failed: {{ error }}"
`,
  );
  const step = workflow.tasks[0]!.cyberian!;

  it("assembles system text, retry message, instructions, loop message and completion rule in order", () => {
    const prompt = cyberianPrompt(step, { params: { n: 7 }, retryError: "result = False" });
    expect(prompt.split("\n").slice(0, 6)).toEqual([
      "Mode 7.",
      "",
      "It failed: result = False",
      "",
      "Add 3 to the file.",
      "",
    ]);
    expect(prompt).toContain("When the file is long enough, say ENOUGH.");
    expect(prompt).toContain("`COMPLETION_STATUS: ENOUGH`");
  });

  it("treats an undefined variable as an error, not empty text", () => {
    expect(() => cyberianPrompt(step, { params: {} })).toThrow(
      /^system_instructions: undefined variable 'n'; give it a value/,
    );
  });

  it("reads the completion status only from an exact final status line", () => {
    expect(completionStatus("Work done.\nCOMPLETION_STATUS: COMPLETE\n")).toBe("COMPLETE");
    expect(completionStatus("I will not say NO_MORE_RESEARCH yet.\nCOMPLETION_STATUS: COMPLETE")).toBe(
      "COMPLETE",
    );
    expect(completionStatus("All avenues exhausted.\n**COMPLETION_STATUS: no_more_research**")).toBe(
      "NO_MORE_RESEARCH",
    );
    expect(completionStatus("Finished.\nNO_MORE_RESEARCH", ["NO_MORE_RESEARCH"])).toBe("NO_MORE_RESEARCH");
    expect(completionStatus("It is not done yet, but COMPLETION_STATUS: COMPLETE soon.")).toBeNull();
    expect(completionStatus("")).toBeNull();
  });
});
