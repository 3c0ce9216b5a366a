/** agentrelay's end-to-end scenarios (agentrelay.md §8), run through the simulator. */
import { describe, expect, it } from "vitest";
import { simulate, type SimulateOptions } from "../../src/engine/simulate.ts";
import { loadGraphFile } from "../../src/graph/load.ts";
import type { Graph } from "../../src/graph/model.ts";
import { fixture } from "../support/fixtures.ts";
import { graphOf } from "../support/graphs.ts";
import { describeNeeding, NO_FIXTURES } from "../support/skips.ts";

function load(path: string, settings: Partial<Graph["settings"]> = {}): Graph {
  const graph = loadGraphFile(fixture("agentrelay/graphs", path));
  return { ...graph, settings: { ...graph.settings, ...settings } };
}

function run(graph: Graph, options: SimulateOptions = {}) {
  const result = simulate(graph, options);
  const status = (id: string) => result.state.tasks[id]!.status;
  const ws = (id: string) => result.state.workstreams[id]!.status;
  const order = (type: string) =>
    result.state.timeline.filter((e) => e.type === type).map((e) => e.task ?? e.workstream);
  return { ...result, status, ws, order };
}

describeNeeding(NO_FIXTURES, "agentrelay's scenarios", () => {
  it("diamond across 4 workstreams with auto-merge: autonomous, every workstream merged", () => {
    const r = run(load("workstreams/diamond_4_workstreams_auto_merge.yaml", { maxConcurrency: 2 }));
    expect(r.outcome).toBe("succeeded");
    expect(["ws_a", "ws_b", "ws_c", "ws_d"].map(r.ws)).toEqual(["merged", "merged", "merged", "merged"]);
    expect(r.reviewerMerged).toEqual([]);
    // B and C ran in parallel once ws_a merged; D waited for both workstreams.
    const events = r.state.timeline.map((e) => `${e.type}:${e.task ?? e.workstream}`);
    expect(events.indexOf("dispatch:double_calc")).toBeGreaterThan(events.indexOf("integration_merged:ws_a"));
    expect(events.indexOf("dispatch:square_calc")).toBeLessThan(events.indexOf("task_merged:double_calc"));
    expect(events.indexOf("dispatch:combined_calc")).toBeGreaterThan(
      events.indexOf("integration_merged:ws_c"),
    );
  });

  it("diamond across 4 workstreams without auto-merge: dependents wait for a human merge of the upstream workstream", () => {
    const r = run(load("workstreams/diamond_4_workstreams.yaml", { maxConcurrency: 2 }));
    // agentrelay calls this run succeeded; we say it waits, since ws_d's PR still needs a person.
    expect(r.outcome).toBe("waiting_for_review");
    expect(r.reviewerMerged).toEqual(["ws_a", "ws_b", "ws_c"]);
    expect(r.ws("ws_d")).toBe("pr_open");
    expect(
      simulate(load("workstreams/diamond_4_workstreams.yaml"), { reviewerMerges: false }).state.tasks
        .double_calc!.status,
    ).toBe("pending");
  });

  it("serial workstream: three tasks without edges run strictly one after another, in id order", () => {
    const r = run(load("workstreams/serial_workstream.yaml", { maxConcurrency: 3 }));
    expect(r.order("dispatch")).toEqual(["create_stack", "extend_stack", "use_stack"]);
    const merged = r.state.timeline.filter((e) => e.type === "task_merged").map((e) => e.at);
    const dispatched = r.state.timeline.filter((e) => e.type === "dispatch").map((e) => e.at);
    expect(dispatched[1]!).toBeGreaterThanOrEqual(merged[0]!);
    expect(dispatched[2]!).toBeGreaterThanOrEqual(merged[1]!);
    expect(r.order("task_merged")).toEqual(["create_stack", "extend_stack", "use_stack"]);
  });

  it("blocked downstream: the dependent is blocked, the unrelated workstream finishes", () => {
    const r = run(load("failure/blocked_downstream.yaml", { maxConcurrency: 2 }), {
      failures: new Map([["fails_first", Infinity]]),
    });
    expect(r.outcome).toBe("waiting_for_review");
    expect(r.status("fails_first")).toBe("failed");
    expect(r.status("blocked_by_first")).toBe("blocked");
    expect(r.state.tasks.blocked_by_first!.reason).toBe("dependency 'fails_first' failed");
    expect(r.status("independent_success")).toBe("merged");
    expect(r.ws("ws_fail")).toBe("failed");
  });

  it("retry on gate failure: two attempts with max_task_attempts 2, then failed", () => {
    const r = run(load("failure/retry_on_gate_failure.yaml", { maxTaskAttempts: 2 }), {
      failures: new Map([["greeter", Infinity]]),
    });
    expect(r.state.tasks.greeter).toMatchObject({ status: "failed", attempt: 2 });
    expect(r.order("dispatch")).toEqual(["greeter", "greeter"]);
    expect(r.outcome).toBe("completed_with_failures");
  });

  it("a task that fails once succeeds on its retry; the failure is not a design concern", () => {
    const r = run(load("workstreams/auto_merge_2_workstreams.yaml", { maxTaskAttempts: 2 }), {
      failures: new Map([["greeting", 1]]),
    });
    expect(r.state.tasks.greeting).toMatchObject({ status: "merged", attempt: 2, concerns: [] });
    expect(r.ws("ws_a")).toBe("merged");
    expect(r.outcome).toBe("waiting_for_review");
  });

  it("concerns block auto-merge: the integration PR stays open for review", () => {
    const r = run(load("concerns/log_concerns_automerge_enabled.yaml"), {
      concerns: new Set(["write_concerns"]),
    });
    expect(r.ws("ws_a")).toBe("pr_open");
    expect(r.state.workstreams.ws_a!.autoMergeSkipped).toBe(true);
    expect(r.outcome).toBe("waiting_for_review");
  });

  it("auto-merge of one workstream unblocks the next; the second's PR is left open", () => {
    const r = run(load("workstreams/auto_merge_2_workstreams.yaml", { maxConcurrency: 2 }));
    expect(r.ws("ws_a")).toBe("merged");
    expect(r.ws("ws_b")).toBe("pr_open");
    expect(r.reviewerMerged).toEqual([]);
  });

  it("agent fails: the task and its workstream fail", () => {
    const r = run(load("failure/agent_fails.yaml"), { failures: new Map([["deliberate_fail", Infinity]]) });
    expect(r.status("deliberate_fail")).toBe("failed");
    expect(r.ws("default")).toBe("failed");
    expect(r.outcome).toBe("completed_with_failures");
  });
});

describe("workstream scenarios", () => {
  it("parent and child workstreams: the child starts once the parent's integration PR is open", () => {
    const graph = graphOf(
      [
        { id: "p1", ws: "parent" },
        { id: "c1", ws: "child" },
      ],
      [{ id: "parent" }, { id: "child", parent: "parent" }],
      "max_concurrency: 2",
    );
    const r = run(graph);
    const events = r.state.timeline.map((e) => `${e.type}:${e.task ?? e.workstream}`);
    expect(events.indexOf("dispatch:c1")).toBeGreaterThan(events.indexOf("integration_opened:parent"));
    expect(r.ws("parent")).toBe("pr_open");
    expect(r.ws("child")).toBe("pr_open");
    expect(r.reviewerMerged).toEqual([]);
  });

  it("a failed parent workstream blocks its child's tasks", () => {
    const graph = graphOf(
      [
        { id: "p1", ws: "parent" },
        { id: "c1", ws: "child" },
      ],
      [{ id: "parent" }, { id: "child", parent: "parent" }],
    );
    const r = run(graph, { failures: new Map([["p1", Infinity]]) });
    expect(r.state.tasks.c1).toMatchObject({
      status: "blocked",
      reason: "ancestor workstream 'parent' failed",
    });
  });

  it("a workstream whose tasks all finish without changes skips integration", () => {
    const graph = graphOf(
      [
        { id: "look", ws: "review" },
        { id: "after", deps: ["look"], ws: "build" },
      ],
      [{ id: "review" }, { id: "build" }],
    );
    const r = run(graph, { noChanges: new Set(["look"]) });
    expect(r.status("look")).toBe("completed");
    expect(r.ws("review")).toBe("merged");
    expect(r.order("integration_skipped")).toEqual(["review"]);
    // Nothing to review, so the dependent workstream starts without a human merge.
    expect(r.reviewerMerged).toEqual([]);
    expect(r.status("after")).toBe("merged");
  });
});
