/**
 * `simulate` drives the clock as a run does (the reconciler's periodic tick, and the merges it asks
 * again), never ends "running" with nothing running, and at any `--at` says the state's own outcome.
 */
import { describe, expect, it } from "vitest";
import { leftToPerson } from "../../src/engine/conflicts.ts";
import { landingWaitsForPerson } from "../../src/engine/landing.ts";
import { standing } from "../../src/engine/progress.ts";
import { simulate } from "../../src/engine/simulate.ts";
import { graphOf } from "../support/graphs.ts";

/** Three gated workstreams into main (one landing at a time), and a task after each. */
const gated = graphOf(
  [
    { id: "a", ws: "left", extra: "completion_gate: make test" },
    { id: "b", ws: "middle", extra: "completion_gate: make test" },
    { id: "c", ws: "right", extra: "completion_gate: make test" },
    { id: "d", ws: "after", deps: ["a", "b", "c"] },
  ],
  [
    { id: "left", autoMerge: true },
    { id: "middle", autoMerge: true },
    { id: "right", autoMerge: true },
    { id: "after", autoMerge: true },
  ],
  "max_concurrency: 3\nmax_repair_attempts: 2",
);

describe("simulate's clock", () => {
  it("verifies each landing in its turn to the end, as the reconciler's tick starts the next", () => {
    const result = simulate(gated, { brokenTogether: new Map([["middle", 1]]), costPerAttempt: 1_000 });
    expect(result.outcome).toBe("succeeded");
    expect(Object.values(result.state.workstreams).map((w) => w.status)).toEqual([
      "merged",
      "merged",
      "merged",
      "merged",
    ]);
  });

  it("says at every --at the outcome its state holds", () => {
    const full = simulate(gated, { brokenTogether: new Map([["middle", 1]]), failures: new Map([["c", 1]]) });
    for (let at = 1; at <= full.eventCount; at++) {
      const { plan, state, outcome } = simulate(gated, {
        brokenTogether: new Map([["middle", 1]]),
        failures: new Map([["c", 1]]),
        maxEvents: at,
      });
      const now = standing(plan, state);
      if (state.outcome) expect(outcome).toBe(state.outcome);
      else if (now.moving) expect(outcome).toBe("running");
      else expect(outcome).not.toMatch(/succeeded|completed/);
      if (Object.values(state.tasks).some((t) => t.status === "running")) expect(outcome).toBe("running");
      if (outcome === "waiting_for_review")
        expect(
          Object.keys(state.workstreams).some((w) => landingWaitsForPerson(plan, state, w)) ||
            Object.values(state.tasks).some((t) => leftToPerson(t) || t.status === "failed"),
        ).toBe(true);
    }
    expect(full.outcome).toBe("completed_with_failures");
  });
});
