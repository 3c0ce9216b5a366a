import { describe, expect, it } from "vitest";
import { createEngine } from "../../src/engine/engine.ts";
import { resumeRun } from "../../src/engine/resume.ts";
import { simulate } from "../../src/engine/simulate.ts";
import { graphOf } from "../support/graphs.ts";

describe("resuming a run with a changed graph", () => {
  const original = graphOf(
    [
      { id: "a", ws: "x" },
      { id: "b", ws: "y" },
      { id: "old", ws: "y", deps: ["b"] },
    ],
    [{ id: "x" }, { id: "y" }],
    "max_concurrency: 2",
  );
  const first = simulate(original, { failures: new Map([["b", Infinity]]) }).state;

  it("changes nothing when the graph is the same", () => {
    const engine = createEngine(original);
    const resumed = resumeRun(engine, original, first, 100);
    expect(resumed.state).toBe(first);
    expect(resumed.drift).toEqual([]);
  });

  it("keeps finished tasks, retries failed ones with new attempt numbers, and reports drift", () => {
    expect(first.tasks.a!.status).toBe("merged");
    expect(first.tasks.b!.status).toBe("failed");
    const changed = graphOf(
      [
        { id: "a", ws: "x", extra: "completion_gate: make test" },
        { id: "b", ws: "y" },
        { id: "c", ws: "x", deps: ["a"] },
      ],
      [{ id: "x" }, { id: "y" }],
      "max_concurrency: 3",
    );
    const engine = createEngine(changed);
    const { state, effects, drift } = resumeRun(engine, changed, first, 1_000_000);
    expect(drift).toEqual([
      "task 'a' changed after it finished; it is kept as it is",
      "task 'b' (failed) will run again",
      "task 'old' was removed from the graph (it was blocked)",
      "task 'c' is new",
      "workstream 'x' has new or reopened tasks after its integration PR was opened; it will be integrated again",
      "max_concurrency changed from 2 to 3",
    ]);
    expect(state.runKey).toBe(first.runKey);
    expect(state.tasks.a).toMatchObject({ status: "merged", attempt: 1 });
    expect(effects).toContainEqual({ type: "dispatch", key: "g/1/b/2", task: "b", attempt: 2 });
    expect(effects).toContainEqual({ type: "dispatch", key: "g/1/c/1", task: "c", attempt: 1 });
    expect(state.outcome).toBeNull();
    expect(state.seq).toBeGreaterThan(first.seq);
  });

  it("keeps what a task's earlier attempts said of their network (not filtered, and why) when it runs again", () => {
    const said = structuredClone(first);
    const unfiltered =
      "network: not filtered: this machine gives the attempt no network namespace (nft was not found on PATH)";
    said.tasks.b!.opsConcerns = [unfiltered];
    const changed = graphOf(
      [
        { id: "a", ws: "x" },
        { id: "b", ws: "y", extra: "completion_gate: make check" },
      ],
      [{ id: "x" }, { id: "y" }],
      "max_concurrency: 2",
    );
    const { state, drift } = resumeRun(createEngine(changed), changed, said, 1_000_000);
    expect(drift).toContain("task 'b' (failed) will run again");
    expect(state.tasks.b!.opsConcerns).toEqual([unfiltered]);
  });
});
