/**
 * What the status comment says holds a task: the same waits plan/readiness.ts applies, so that the
 * counts per cause are true. Here, a serialised overlap.
 */
import { describe, expect, it } from "vitest";
import { createEngine } from "../../src/engine/engine.ts";
import { holds } from "../../src/engine/holds.ts";
import { graphOf } from "../support/graphs.ts";

const tagged = (...paths: string[]) =>
  `tagged_paths: [${paths.map((p) => `{ path: ${p}, category: src }`).join(", ")}]`;

describe("what holds a task", () => {
  it("names the earlier workstream's PR a serialised overlap waits for, as readiness does", () => {
    const engine = createEngine(
      graphOf(
        [
          { id: "a", ws: "w1", extra: tagged("x.py") },
          { id: "b", ws: "w2", extra: tagged("x.py") },
        ],
        [{ id: "w1" }, { id: "w2" }],
        "overlaps: serialize",
      ),
    );
    const { state } = engine.start(0);
    expect(state.tasks.b!.status).toBe("pending"); // b waits for w1 to land, though a slot is free
    // a is at work: b waits for its workstream to land, and is told why.
    expect(holds(engine.plan, state).get("b")).toEqual({ kind: "overlap", task: "a", workstream: "w1" });
    // a merged into w1, whose integration PR waits for a person's merge (no auto_merge): so does b.
    Object.assign(state.tasks.a!, { status: "merged" });
    Object.assign(state.workstreams.w1!, { status: "merge_ready", unfinished: 0, integration: "opening" });
    engine.apply(state, {
      type: "integration_pr_opened",
      workstream: "w1",
      pr: { number: 1, url: "https://github.com/o/r/pull/1" },
      at: 1,
    });
    expect(state.tasks.b!.status).toBe("pending");
    expect(holds(engine.plan, state).get("b")).toEqual({ kind: "person", pr: { workstream: "w1" } });
  });
});
