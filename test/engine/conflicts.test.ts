import { describe, expect, it } from "vitest";
import { createEngine } from "../../src/engine/engine.ts";
import { simulate, simulationJson } from "../../src/engine/simulate.ts";
import type { EngineEffect, EngineEvent, RunState } from "../../src/engine/types.ts";
import { graphOf } from "../support/graphs.ts";

/** Two workstreams working in parallel, both merging into main. */
const graphWith = (head = "", ws = "") =>
  graphOf(
    [
      { id: "a", ws: "left" },
      { id: "b", ws: "right" },
    ],
    [
      { id: "left", autoMerge: true },
      { id: "right", autoMerge: true, ...(ws ? { extra: ws } : {}) },
    ],
    `max_concurrency: 2${head ? `\n${head}` : ""}`,
  );

const resolutions = (state: RunState) => state.workstreams.right!.conflict?.resolutions ?? [];

/** A run whose `right` integration PR is open: the moment its merge is asked for. */
function withOpenPr() {
  const engine = createEngine(graphWith());
  const { state } = engine.start(0);
  Object.assign(state.workstreams.right!, {
    status: "pr_open",
    integration: "open",
    pr: { number: 9, url: "u" },
  });
  return { engine, state };
}

describe("conflicts between an integration branch and its target", () => {
  it.each([
    // conflicting merges, graph key, workstream key -> resolutions run, outcome
    [1, "", "", 1, "succeeded"],
    [2, "", "", 2, "succeeded"],
    [3, "", "", 2, "waiting_for_review"],
    [3, "max_resolution_attempts: 3", "", 3, "succeeded"],
    [1, "max_resolution_attempts: 3", "max_resolution_attempts: 0", 0, "waiting_for_review"],
  ] as const)(
    "%i conflicting merge(s) with %j %j: %i resolution(s), %s",
    (conflicts, head, ws, expected, outcome) => {
      const result = simulate(graphWith(head, ws), {
        integrationConflicts: new Map([["right", conflicts]]),
        reviewerMerges: false,
      });
      expect(resolutions(result.state)).toHaveLength(expected);
      expect(result.outcome).toBe(outcome);
      const events = (simulationJson(result) as { events: { type: string; detail?: string }[] }).events;
      expect(events.filter((e) => e.type === "resolution")).toHaveLength(expected);
      if (outcome === "waiting_for_review") {
        const reason = result.state.workstreams.right!.reason!;
        expect(reason).toMatch(
          /^conflicts with main in simulated\.txt \(.+\): merge main into the integration branch by hand$/,
        );
        expect(events.at(-1)).toEqual({ type: "conflict", workstream: "right", detail: reason });
      }
    },
  );

  it("dispatches one resolution however often the conflict is reported, and merges again when it ends", () => {
    const { engine, state: open } = withOpenPr();
    const conflicted: EngineEvent = {
      type: "integration_conflicted",
      workstream: "right",
      files: ["calc.py"],
      at: 1,
    };
    const effects: EngineEffect[] = [
      ...engine.apply(open, conflicted),
      ...engine.apply(open, { ...conflicted, at: 2 }),
      ...engine.apply(open, { ...conflicted, at: 3 }),
    ];
    expect(effects.filter((e) => e.type === "resolve_conflicts")).toEqual([
      {
        type: "resolve_conflicts",
        key: "g/1/ws/right/resolve/1",
        workstream: "right",
        n: 1,
        files: ["calc.py"],
      },
    ]);
    // The same answer twice: one merge asked for, the record written once.
    const finished: EngineEvent = {
      type: "resolution_finished",
      workstream: "right",
      n: 1,
      ok: true,
      costUsd: 0.2,
      at: 4,
    };
    const merge = engine.apply(open, finished);
    expect(engine.apply(open, { ...finished, at: 5 })).toEqual([]);
    expect(merge).toContainEqual(
      expect.objectContaining({ type: "merge_integration_pr", workstream: "right" }),
    );
    expect(resolutions(open)).toMatchObject([{ n: 1, outcome: "succeeded", costUsd: 0.2 }]);
    expect(open.budget!.workstreams.right!.spentUsd).toBe(0.2);
  });

  it("after a failed resolution asks for the merge again: a person who resolved first wins", () => {
    const { engine, state } = withOpenPr();
    engine.apply(state, { type: "integration_conflicted", workstream: "right", files: ["x"], at: 1 });
    const after = engine.apply(state, {
      type: "resolution_finished",
      workstream: "right",
      n: 1,
      ok: false,
      reason: "the gate failed",
      at: 2,
    });
    expect(after).toContainEqual(
      expect.objectContaining({ type: "merge_integration_pr", workstream: "right" }),
    );
    engine.apply(state, { type: "integration_pr_merged", workstream: "right", at: 3 });
    expect(state.workstreams.right!.status).toBe("merged");
    expect(state.timeline.map((e) => e.type)).toContain("resolution_failed");
  });

  it("asks again for a resolution whose answer was lost (the reconciler, a resumed local run)", () => {
    const { engine, state } = withOpenPr();
    engine.apply(state, { type: "integration_conflicted", workstream: "right", files: ["x"], at: 1 });
    expect(engine.pendingEffects(state)).toContainEqual(
      expect.objectContaining({ type: "resolve_conflicts", key: "g/1/ws/right/resolve/1" }),
    );
  });

  it("a spent budget leaves the conflict to a person instead of starting an agent", () => {
    const result = simulate(graphWith("max_cost_usd: 0.5"), {
      integrationConflicts: new Map([["right", 1]]),
      costPerAttempt: 0.25,
      reviewerMerges: false,
    });
    expect(resolutions(result.state)).toEqual([]);
    expect(result.state.workstreams.right!.reason).toMatch(/budget spent: \$0\.50 of \$0\.50 for the run/);
  });
});
