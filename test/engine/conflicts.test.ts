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
          /^merge `main` into `agentrelay\/g\/right\/integration` by hand: they conflict in `simulated\.txt` \(.+\)$/,
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
      costMicros: 200_000,
      at: 4,
    };
    const merge = engine.apply(open, finished);
    expect(engine.apply(open, { ...finished, at: 5 })).toEqual([]);
    expect(merge).toContainEqual(
      expect.objectContaining({ type: "merge_integration_pr", workstream: "right" }),
    );
    expect(resolutions(open)).toMatchObject([{ n: 1, outcome: "succeeded", costMicros: 200_000 }]);
    expect(open.budget!.workstreams.right!.spentMicros).toBe(200_000);
  });

  it("tells a person the real cause when the resolutions cleared the markers but the gates failed", () => {
    const { engine, state } = withOpenPr();
    const conflicted: EngineEvent = {
      type: "integration_conflicted",
      workstream: "right",
      files: ["lib/math.js"],
      at: 1,
    };
    const cause =
      "the conflicts in lib/math.js were resolved, but the merged result fails its gates (the gate failed on the merged result: npm test); a repair did not fix it: the gate failed on the merged result: npm test";
    for (const n of [1, 2]) {
      engine.apply(state, { ...conflicted, resolutions: n - 1, at: n * 10 });
      engine.apply(state, {
        type: "resolution_finished",
        workstream: "right",
        n,
        ok: false,
        reason: cause,
        verdict: "break",
        at: n * 10 + 1,
      });
    }
    engine.apply(state, { ...conflicted, resolutions: 2, at: 30 });
    expect(state.workstreams.right!.reason).toBe(
      `merge \`main\` into \`agentrelay/g/right/integration\` by hand: ${cause} (2 resolution attempts did not settle them)`,
    );
  });

  it.each(["weakened", "timed_out", "workflows"] as const)(
    "leaves a resolution that failed as %s to a person at once",
    (verdict) => {
      const { engine, state } = withOpenPr();
      engine.apply(state, {
        type: "integration_conflicted",
        workstream: "right",
        files: ["t.test.js"],
        at: 1,
      });
      const reason =
        'the resolution changed what judges it (dropped "adds" from the test t.test.js): a person decides whether that holds';
      const effects = engine.apply(state, {
        type: "resolution_finished",
        workstream: "right",
        n: 1,
        ok: false,
        reason,
        verdict,
        at: 2,
      });
      expect(effects.filter((e) => e.type === "resolve_conflicts")).toEqual([]);
      expect(state.workstreams.right!.conflict).toMatchObject({ toPerson: true });
      expect(state.workstreams.right!.reason).toBe(
        `merge \`main\` into \`agentrelay/g/right/integration\` by hand: ${reason}`,
      );
    },
  );

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

  it("waits for a running resolution, times it out at its deadline, and does not count a lost one", () => {
    const { engine, state } = withOpenPr();
    engine.apply(state, { type: "integration_conflicted", workstream: "right", files: ["x"], at: 1 });
    // The reconciler asks for no merge (and no second resolution) while one runs.
    expect(engine.pendingEffects(state).filter((e) => e.type !== "prepare_workstream")).toEqual([]);
    const deadline = resolutions(state)[0]!.deadline!;
    expect(engine.apply(state, { type: "tick", at: deadline - 1 })).toEqual([]);
    expect(engine.apply(state, { type: "tick", at: deadline })).toContainEqual(
      expect.objectContaining({ type: "merge_integration_pr", resolutions: 1 }),
    );
    expect(resolutions(state)[0]).toMatchObject({
      outcome: "failed",
      reason: expect.stringMatching(/deadline/),
    });
    // The next conflict starts resolution 2; its job vanishes, which costs no attempt.
    engine.apply(state, {
      type: "integration_conflicted",
      workstream: "right",
      files: ["x"],
      resolutions: 1,
      at: 2,
    });
    const lost = {
      type: "resolution_lost",
      workstream: "right",
      n: 2,
      reason: "interrupted",
      at: 3,
    } as const;
    expect(engine.apply(state, lost)).toContainEqual(
      expect.objectContaining({ type: "merge_integration_pr" }),
    );
    const third = engine.apply(state, {
      type: "integration_conflicted",
      workstream: "right",
      files: ["x"],
      resolutions: 2,
      at: 4,
    });
    expect(third).toContainEqual(expect.objectContaining({ type: "resolve_conflicts", n: 3 }));
    expect(resolutions(state).map((r) => r.outcome)).toEqual(["failed", "lost", null]);
  });

  it("stops a running resolution when the run is cancelled, and its late answer merges nothing", () => {
    const { engine, state } = withOpenPr();
    engine.apply(state, { type: "integration_conflicted", workstream: "right", files: ["x"], at: 1 });
    const cancelled = engine.apply(state, { type: "command", command: "cancel", at: 2 });
    expect(cancelled).toContainEqual({
      type: "cancel_resolution",
      key: "g/1/ws/right/resolve/1/cancel",
      workstream: "right",
      n: 1,
    });
    const late = engine.apply(state, {
      type: "resolution_finished",
      workstream: "right",
      n: 1,
      ok: true,
      at: 3,
    });
    expect(late.filter((e) => e.type === "merge_integration_pr")).toEqual([]);
  });

  it("lets only the job dispatched for a resolution start it, once", () => {
    const { engine, state } = withOpenPr();
    engine.apply(state, { type: "integration_conflicted", workstream: "right", files: ["x"], at: 1 });
    const about = { workstream: "right", n: 1 };
    engine.apply(state, { type: "resolution_dispatched", ...about, job: "77", at: 2 });
    engine.apply(state, { type: "resolution_dispatched", ...about, job: "78", at: 2 });
    const seq = state.seq;
    engine.apply(state, { type: "resolution_started", ...about, job: "78", at: 3 });
    expect(state.seq).toBe(seq); // another job: nothing
    engine.apply(state, { type: "resolution_started", ...about, job: "77", at: 4 });
    engine.apply(state, { type: "resolution_started", ...about, job: "77", at: 5 });
    expect(resolutions(state)[0]).toMatchObject({ job: "77", startedAt: 4, outcome: null });
  });

  it("keeps trying the merge of conflicts left to a person, so that their push is noticed", () => {
    const { engine, state } = withOpenPr();
    const conflicted = { type: "integration_conflicted" as const, workstream: "right", files: ["x"] };
    engine.apply(state, { ...conflicted, at: 1 });
    for (const n of [1, 2]) {
      engine.apply(state, { type: "resolution_finished", workstream: "right", n, ok: false, at: 2 });
      engine.apply(state, { ...conflicted, resolutions: n, at: 3 });
    }
    expect(state.workstreams.right!.autoMergeSkipped).toBe(true);
    expect(engine.pendingEffects(state)).toContainEqual(
      expect.objectContaining({ type: "merge_integration_pr", workstream: "right", resolutions: 2 }),
    );
    engine.apply(state, { type: "integration_pr_merged", workstream: "right", at: 4 });
    expect(state.workstreams.right!.status).toBe("merged");
  });

  /** `right`'s integration PR is open while `a` runs, holding the whole budget of the run. */
  const budgetHeld = (ws = "") => {
    const engine = createEngine(graphWith("max_cost_usd: 0.5", ws));
    const { state } = engine.start(0);
    Object.assign(state.tasks.b!, { status: "merged" });
    state.candidates = ["a"];
    Object.assign(state.workstreams.right!, {
      status: "pr_open",
      integration: "open",
      unfinished: 0,
      pr: { number: 9, url: "u" },
    });
    engine.apply(state, { type: "workstream_prepared", workstream: "left", at: 1 });
    return { engine, state };
  };

  it("waits while running attempts hold the budget, and resolves once they give it back", () => {
    const { engine, state } = budgetHeld();
    expect(state.tasks.a!.attempts[0]!.capMicros).toBe(500_000); // a holds all of it
    const conflict: EngineEvent = {
      type: "integration_conflicted",
      workstream: "right",
      files: ["x"],
      resolutions: 0,
      at: 2,
    };
    expect(engine.apply(state, conflict)).toEqual([]);
    expect(state.workstreams.right!).toMatchObject({ autoMergeSkipped: false, reason: null });
    engine.apply(state, { type: "job_succeeded", task: "a", attempt: 1, costMicros: 100_000, at: 3 });
    expect(engine.apply(state, { ...conflict, at: 4 })).toContainEqual(
      expect.objectContaining({ type: "resolve_conflicts", n: 1, capMicros: 400_000 }),
    );
  });

  it("with resolution off, leaves the conflict to a person at once, even while attempts hold the budget", () => {
    const { engine, state } = budgetHeld("max_resolution_attempts: 0");
    engine.apply(state, { type: "integration_conflicted", workstream: "right", files: ["x"], at: 2 });
    expect(state.workstreams.right!).toMatchObject({ autoMergeSkipped: true });
    expect(state.workstreams.right!.reason).toMatch(/resolution is off, `max_resolution_attempts: 0`/);
  });

  it("a spent budget leaves the conflict to a person instead of starting an agent", () => {
    const result = simulate(graphWith("max_cost_usd: 0.5\nmin_attempt_cost_usd: 0.1"), {
      integrationConflicts: new Map([["right", 1]]),
      costPerAttempt: 250_000,
      reviewerMerges: false,
    });
    expect(resolutions(result.state)).toEqual([]);
    expect(result.state.workstreams.right!.reason).toMatch(/budget spent: \$0\.50 of \$0\.50 for the run/);
  });
});

describe("conflicts between a task PR and its integration branch", () => {
  const taskResolutions = (state: RunState) => state.tasks.b!.conflict?.resolutions ?? [];

  it.each([
    // conflicting merges, task key -> resolutions run, outcome, task status
    [1, "", 1, "succeeded", "merged"],
    [3, "", 2, "waiting_for_review", "pr_open"],
    [3, "max_resolution_attempts: 3", 3, "succeeded", "merged"],
  ] as const)(
    "%i conflicting merge(s) with %j: %i resolution(s), %s",
    (conflicts, key, expected, outcome, status) => {
      const graph = graphOf(
        [
          { id: "a", ws: "left" },
          { id: "b", ws: "right", ...(key ? { extra: key } : {}) },
        ],
        [
          { id: "left", autoMerge: true },
          { id: "right", autoMerge: true },
        ],
        "max_concurrency: 2",
      );
      const result = simulate(graph, { taskConflicts: new Map([["b", conflicts]]), reviewerMerges: false });
      expect(taskResolutions(result.state)).toHaveLength(expected);
      expect(result.outcome).toBe(outcome);
      expect(result.state.tasks.b!.status).toBe(status);
      const events = (
        simulationJson(result) as { events: { type: string; task?: string; detail?: string }[] }
      ).events;
      expect(events.filter((e) => e.type === "resolution")).toEqual(
        Array.from({ length: expected }, (_, i) => ({
          type: "resolution",
          task: "b",
          workstream: "right",
          attempt: i + 1,
          detail: "conflicts with `agentrelay/g/right/integration` in `simulated.txt`",
        })),
      );
      if (status === "pr_open")
        expect(result.state.tasks.b!.reason).toBe(
          "merge `agentrelay/g/right/integration` into `agentrelay/g/b` by hand: they conflict in `simulated.txt` (2 resolution attempts did not settle them)",
        );
    },
  );

  it("with max_resolution_attempts: 0 fails the task on its conflict, as before resolutions", () => {
    const graph = graphOf([{ id: "b", ws: "right", extra: "max_resolution_attempts: 0" }], [{ id: "right" }]);
    const result = simulate(graph, { taskConflicts: new Map([["b", 1]]) });
    expect(result.state.tasks.b).toMatchObject({
      status: "failed",
      reason:
        "merging the task PR failed: it has conflicts with `agentrelay/g/right/integration` in `simulated.txt`",
    });
  });

  it("charges a task's resolution to the task's budget", () => {
    const graph = graphOf([{ id: "b", ws: "right", extra: "max_cost_usd: 0.5" }], [{ id: "right" }]);
    const result = simulate(graph, { taskConflicts: new Map([["b", 5]]), costPerAttempt: 200_000 });
    // One attempt ($0.20) and one resolution ($0.20); what is left ($0.10) is less than an attempt's
    // floor (four turns of Sonnet, $0.30): no second resolution starts to be stopped at once.
    expect(taskResolutions(result.state).map((r) => r.costMicros)).toEqual([200_000]);
    expect(result.state.tasks.b!.reason).toMatch(
      /^merge .* by hand: .*budget nearly spent: \$0\.40 of \$0\.50 for task 'b', \$0\.10 left, less than an attempt's \$0\.30\)/,
    );
  });

  it("leaves a read_only workstream's conflict to a person: no agent of it may push", () => {
    const graph = graphOf(
      [{ id: "b", ws: "right", extra: "isolation: {token_tier: read_only}" }],
      [{ id: "right", autoMerge: true }],
    );
    const result = simulate(graph, { integrationConflicts: new Map([["right", 1]]), reviewerMerges: false });
    expect(result.state.workstreams.right!.reason).toMatch(/task 'b' is read_only, so no agent may push/);
  });
});
