import { expect, it } from "vitest";
import { GraphError } from "../../src/graph/errors.ts";
import { loadGraphFile } from "../../src/graph/load.ts";
import { canonicalOrder } from "../../src/plan/plan.ts";
import { fixture, yamlFiles } from "../support/fixtures.ts";
import { describeNeeding, NO_FIXTURES } from "../support/skips.ts";

/** Orders worked out by hand from agentrelay's rule: Kahn's algorithm, ready set sorted by id. */
const EXPECTED_ORDERS: Record<string, string[]> = {
  "failure/blocked_downstream.yaml": ["fails_first", "blocked_by_first", "independent_success"],
  "graph_awareness/spec_test_impl.yaml": ["spec_bounded_queue", "test_bounded_queue", "impl_bounded_queue"],
  "isolation/token_tiers.yaml": ["readonly_task", "standard_task"],
  "roles/pipeline.yaml": [
    "spec_bounded_queue",
    "test_bounded_queue",
    "review_bounded_queue",
    "impl_bounded_queue",
  ],
  "smoke/config_surface.yaml": ["farewell_fn", "greet_fn"],
  "smoke/inputs_from_chain.yaml": ["spec_queue", "test_queue", "impl_queue"],
  "smoke/no_commit_chained.yaml": ["review_structure", "review_readme"],
  "smoke/quick_chained.yaml": ["counter_fn", "use_counter"],
  "smoke/quick_parallel.yaml": ["add_fn", "mul_fn"],
  "workstreams/auto_merge_2_workstreams.yaml": ["greeting", "farewell"],
  "workstreams/diamond_1_workstream.yaml": ["base_calc", "double_calc", "square_calc", "combined_calc"],
  "workstreams/diamond_4_workstreams.yaml": ["base_calc", "double_calc", "square_calc", "combined_calc"],
  "workstreams/diamond_4_workstreams_auto_merge.yaml": [
    "base_calc",
    "double_calc",
    "square_calc",
    "combined_calc",
  ],
  "workstreams/serial_workstream.yaml": ["create_stack", "extend_stack", "use_stack"],
};

describeNeeding(NO_FIXTURES, "agentrelay's own graphs", () => {
  const files = yamlFiles("agentrelay/graphs");

  it("finds the fixture graphs", () => {
    expect(files.length).toBeGreaterThanOrEqual(20);
  });

  it.each(files)("loads %s unchanged", (file) => {
    const graph = loadGraphFile(fixture("agentrelay/graphs", file));
    expect(graph.dialect).toBe("agentrelay");
    const expected = EXPECTED_ORDERS[file];
    if (expected) expect(canonicalOrder(graph)).toEqual(expected);
    else expect(canonicalOrder(graph)).toHaveLength(graph.tasks.length);
  });

  it("keeps operational keys and per-field isolation from the files", () => {
    const config = loadGraphFile(fixture("agentrelay/graphs/smoke/config_surface.yaml"));
    expect(config.settings).toMatchObject({
      maxConcurrency: 2,
      maxTaskAttempts: 1,
      teardownMode: "on_success",
      tools: ["pixi"],
    });
    expect(config.tasks[0]!.primaryAgent.model).toBe("claude-haiku-4-5-20251001");
    const tiers = loadGraphFile(fixture("agentrelay/graphs/isolation/token_tiers.yaml"));
    const byId = new Map(tiers.tasks.map((t) => [t.id, t.primaryAgent.isolation]));
    expect(byId.get("readonly_task")).toEqual({
      sandbox: "oci",
      tokenTier: "read_only",
      image: null,
      runtime: null,
    });
    expect(byId.get("standard_task")).toEqual({
      sandbox: "oci",
      tokenTier: "standard",
      image: null,
      runtime: null,
    });
  });

  it("resolves inputs_from in both forms with its category filter", () => {
    const graph = loadGraphFile(fixture("agentrelay/graphs/smoke/inputs_from_chain.yaml"));
    const impl = graph.tasks.find((t) => t.id === "impl_queue")!;
    expect(impl.inputsFrom).toEqual([
      { task: "spec_queue", category: "stubs" },
      { task: "test_queue", category: "tests" },
    ]);
    expect(impl.maxGateAttempts).toBe(5);
  });
});

describeNeeding(NO_FIXTURES, "agentrelay's documentation examples", () => {
  it("loads the minimal graph with its implicit default workstream", () => {
    const graph = loadGraphFile(fixture("agentrelay/docs-examples/minimal.yaml"));
    expect(graph.workstreams).toEqual([
      {
        id: "default",
        parentId: null,
        baseBranch: "main",
        mergeTargetBranch: "main",
        autoMerge: false,
        maxCostMicros: null,
        maxResolutionAttempts: null,
        integrationGate: null,
        verifyIntegration: null,
        maxRepairAttempts: null,
      },
    ]);
    expect(canonicalOrder(graph)).toEqual(["plan", "implement"]);
  });

  it("turns agentrelay's start-up crashes into located errors", () => {
    const file = fixture("agentrelay/docs-examples/workstreams.yaml");
    const error = (() => {
      try {
        loadGraphFile(file);
      } catch (e) {
        return e as GraphError;
      }
    })();
    expect(error).toBeInstanceOf(GraphError);
    const lines = error!.issues.map((i) => `${i.line}:${i.column}: ${i.path}: ${i.message}`);
    expect(lines).toContain(
      "5:5: workstreams[0]: workstream 'feature_a' has no tasks; give it a task or remove it",
    );
    expect(lines).toContain(
      "20:5: tasks[0]: task 'write_spec' has role 'generic' and no description; the description is its whole assignment",
    );
  });
});

describeNeeding(NO_FIXTURES, "cyberian workflows", () => {
  const workflows = yamlFiles("cyberian").filter((f) => !f.endsWith("test-farm.yaml"));

  it("finds the fixture workflows", () => {
    expect(workflows.length).toBeGreaterThanOrEqual(6);
  });

  it.each(workflows)("loads %s", (file) => {
    const graph = loadGraphFile(fixture("cyberian", file));
    expect(graph.dialect).toBe("cyberian");
    expect(graph.tasks.length).toBeGreaterThan(0);
    // A chain in depth-first order: each step depends on the one before it.
    for (const [i, task] of graph.tasks.entries()) {
      expect(task.dependencies).toEqual(i === 0 ? [] : [graph.tasks[i - 1]!.id]);
    }
  });

  it("rejects the farm configuration as not a workflow", () => {
    expect(() => loadGraphFile(fixture("cyberian/tests/examples/test-farm.yaml"))).toThrow(
      /test-farm\.yaml:1:1: this is a cyberian farm configuration/,
    );
  });

  it("compiles the subtask tree in pre-order with inherited system instructions", () => {
    const graph = loadGraphFile(fixture("cyberian/tests/examples/system-instructions-demo.yaml"));
    expect(graph.tasks.map((t) => t.id)).toEqual([
      "research",
      "analyze",
      "summarize",
      "summarize.format",
      "summarize.validate",
    ]);
    const system = new Map(graph.tasks.map((t) => [t.id, t.cyberian!.systemInstructions?.split("\n")[0]]));
    expect(system.get("research")).toBe("IMPORTANT: You are operating in {{agent_mode}} mode.");
    expect(system.get("analyze")).toBe("OVERRIDE: Perform deep analysis regardless of mode.");
    expect(system.get("summarize.format")).toBe("IMPORTANT: You are operating in {{agent_mode}} mode.");
    expect(system.get("summarize.validate")).toBe("VALIDATION MODE: Check all outputs for accuracy.");
    expect(graph.cyberian!.params.map((p) => [p.name, p.required])).toEqual([["agent_mode", true]]);
  });

  it("keeps loops, success criteria and their retry budget", () => {
    const research = loadGraphFile(fixture("cyberian/tests/examples/deep-research.yaml"));
    expect(research.tasks[1]!.cyberian!.loopUntil).toMatchObject({ status: "NO_MORE_RESEARCH" });
    const tags = loadGraphFile(fixture("cyberian/examples/tag-documents/tag-workflow.yaml"));
    expect(tags.tasks[0]!.cyberian!.successCriteria).toMatchObject({
      script: "scripts/validate_tags.py",
      maxRetries: 3,
    });
    expect(tags.tasks[0]!.cyberian!.preconditions?.filesExist[0]?.patterns).toContain("taxonomy.json");
    expect(tags.cyberian!.syncTargets).toEqual(["taxonomy.json", "scripts/"]);
  });
});
