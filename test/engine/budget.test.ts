import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createEngine } from "../../src/engine/engine.ts";
import { spendLine } from "../../src/engine/budget.ts";
import { attemptFloorMicros } from "../../src/graph/attempt-floor.ts";
import { resumeRun } from "../../src/engine/resume.ts";
import { simulate, simulationJson } from "../../src/engine/simulate.ts";
import type { EngineEffect, EngineEvent, RunState } from "../../src/engine/types.ts";
import { usd } from "../../src/graph/amount.ts";
import { buildPlan } from "../../src/plan/plan.ts";
import { type StatusView, tasksToDispatch } from "../../src/plan/readiness.ts";
import { graphOf } from "../support/graphs.ts";

const dispatches = (effects: EngineEffect[]) =>
  effects.filter((e): e is Extract<EngineEffect, { type: "dispatch" }> => e.type === "dispatch");

/** Three workstreams of chained tasks; the run, ws_b and task c2 have budgets. */
const graph = graphOf(
  [
    { id: "a1", ws: "ws_a" },
    { id: "a2", ws: "ws_a", deps: ["a1"] },
    { id: "b1", ws: "ws_b" },
    { id: "b2", ws: "ws_b", deps: ["b1"] },
    { id: "c1", ws: "ws_c" },
    { id: "c2", ws: "ws_c", deps: ["c1"], extra: "max_cost_usd: 0.5\nmax_attempt_cost_usd: 0.3" },
  ],
  [
    { id: "ws_a", autoMerge: true },
    { id: "ws_b", autoMerge: true, extra: "max_cost_usd: 0.6" },
    { id: "ws_c", autoMerge: true },
  ],
  "max_concurrency: 3\nmax_task_attempts: 3\nmax_cost_usd: 2",
);

describe("budgets", () => {
  it("caps each attempt by the least of its budgets, sharing the run's among what may start now", () => {
    const engine = createEngine(graph);
    const { state, effects } = engine.start(0);
    const prepared = ["ws_a", "ws_b", "ws_c"].flatMap((workstream) =>
      engine.apply(state, { type: "workstream_prepared", workstream, at: 1 }),
    );
    const caps = Object.fromEntries(dispatches([...effects, ...prepared]).map((d) => [d.task, d.capMicros]));
    // $2 shared three ways as three workstreams may start; ws_b holds at most $0.60, so the last
    // to start has the rest: the caps add up to the run's budget, never more.
    expect(caps).toEqual({ a1: 666_666, b1: 600_000, c1: 733_334 });
    expect(state.budget!.run.reservedMicros).toBe(2_000_000);
    expect(state.tasks.b1!.attempts[0]!.capMicros).toBe(600_000);
  });

  it("never starts an attempt below its floor: the first takes the floor, the other waits for what it gives back", () => {
    const tight = graphOf(
      [
        { id: "a1", ws: "x" },
        { id: "b1", ws: "y" },
      ],
      [{ id: "x" }, { id: "y" }],
      "max_concurrency: 2\nmax_cost_usd: 0.5",
    );
    const engine = createEngine(tight);
    const { state } = engine.start(0);
    const first = ["x", "y"].flatMap((workstream) =>
      engine.apply(state, { type: "workstream_prepared", workstream, at: 1 }),
    );
    // Half of $0.50 is less than four turns of Sonnet ($0.30): a1 gets the floor, b1 waits.
    expect(dispatches(first).map((d) => [d.task, d.capMicros])).toEqual([["a1", 300_000]]);
    const after = engine.apply(state, {
      type: "job_failed",
      task: "a1",
      attempt: 1,
      reason: "x",
      costMicros: 100_000,
      at: 2,
    });
    expect(dispatches(after).map((d) => [d.task, d.capMicros])).toEqual([["b1", 400_000]]);
  });

  it.each([
    ["", 300_000],
    ["model: claude-opus-4-1", 1_500_000],
    ["model: claude-opus-4-5", 500_000],
    ["model: claude-haiku-4-5", 100_000],
    ["model: haiku\nmin_attempt_cost_usd: 0.02", 20_000],
  ])("the floor with %j is %d micro-dollars, and less left waits as a spent budget does", (head, floor) => {
    const g = graphOf([{ id: "t1" }, { id: "t2", deps: ["t1"] }], undefined, `max_cost_usd: 2\n${head}`);
    const engine = createEngine(g);
    const { state } = engine.start(0);
    const first = dispatches(
      engine.apply(state, { type: "workstream_prepared", workstream: "default", at: 1 }),
    );
    expect(first.map((d) => d.capMicros)).toEqual([2_000_000]);
    // t1 spends all but one micro-dollar less than the floor: t2 does not start, and the run says why.
    const spent = 2_000_000 - floor + 1;
    engine.apply(state, { type: "job_succeeded", task: "t1", attempt: 1, costMicros: spent, at: 2 });
    engine.apply(state, { type: "task_pr_opened", task: "t1", pr: { number: 1, url: "u" }, at: 3 });
    expect(
      dispatches(
        engine.apply(state, { type: "task_pr_merged", task: "t1", pr: { number: 1, url: "u" }, at: 4 }),
      ),
    ).toEqual([]);
    // Rounded as the spend line rounds (one rule for every amount); what is left, reading as the
    // floor, is said as less than it.
    expect(Object.values(state.budget!.spent)).toEqual([
      `budget nearly spent: ${usd(spent)} of $2.00 for the run, less than an attempt's ${usd(floor)} left`,
    ]);
    expect(Object.values(state.budget!.spent)[0]).toContain(
      spendLine(state, g).slice("Spent ".length, -" of $2.00".length),
    );
    expect(state.tasks.t2!.status).toBe("pending");
  });

  it("counts what failed and cancelled attempts spent, and gives back what running ones held", () => {
    const engine = createEngine(graph);
    const { state } = engine.start(0);
    for (const workstream of ["ws_a", "ws_b", "ws_c"])
      engine.apply(state, { type: "workstream_prepared", workstream, at: 1 });
    engine.apply(state, {
      type: "job_failed",
      task: "a1",
      attempt: 1,
      reason: "x",
      costMicros: 300_000,
      at: 2,
    });
    engine.apply(state, { type: "command", command: "cancel", task: "b1", at: 3 });
    // The cancelled attempt reports what it spent after the cancel.
    engine.apply(state, {
      type: "job_failed",
      task: "b1",
      attempt: 1,
      kind: "cancelled",
      reason: "cancelled",
      costMicros: 100_000,
      at: 4,
    });
    expect(state.budget!.run.spentMicros).toBe(400_000);
    expect(state.budget!.workstreams.ws_b!.spentMicros).toBe(100_000);
    expect(state.budget!.workstreams.ws_b!.reservedMicros).toBe(0);
    // Held now: c1's cap and a1's retry's, to the micro-dollar.
    const held = ["a1", "c1"].map((id) => state.tasks[id]!.attempts.at(-1)!.capMicros!);
    expect(state.budget!.run.reservedMicros).toBe(held[0]! + held[1]!);
  });

  it("waits when a budget is spent, says so once, and resumes exactly once when it is raised", () => {
    const small = graphOf(
      [{ id: "t1" }, { id: "t2", deps: ["t1"] }, { id: "t3", deps: ["t2"] }],
      undefined,
      "max_cost_usd: 1",
    );
    const result = simulate(small, { costPerAttempt: 500_000 });
    expect(result.outcome).toBe("waiting_for_budget");
    expect(result.state.tasks.t3!.status).toBe("pending");
    const json = simulationJson(result) as { events: { type: string; detail?: string }[]; spentUsd: number };
    expect(json.spentUsd).toBe(1);
    expect(json.events.filter((e) => e.type === "budget_exhausted")).toEqual([
      { type: "budget_exhausted", detail: "budget spent: $1.00 of $1.00 for the run" },
    ]);

    const engine = createEngine(small);
    const state: RunState = structuredClone(result.state);
    const raise: EngineEvent = {
      type: "command",
      command: "budget",
      micros: 1_000_000,
      id: "comment-7",
      by: "ann",
      at: 99,
    };
    const first = engine.apply(state, raise);
    const again = engine.apply(state, { ...raise, at: 100 });
    expect(dispatches(first).map((d) => [d.task, d.capMicros])).toEqual([["t3", 1_000_000]]);
    expect(again).toEqual([]);
    expect(first).toContainEqual(expect.objectContaining({ type: "reply", ok: true }));
    expect(state.budget!.spent).toEqual({});
  });

  it("keeps what was spent when a changed graph resumes the run, and goes on under its new limits", () => {
    const yaml = (limit: number) =>
      graphOf([{ id: "t1" }, { id: "t2", deps: ["t1"] }], undefined, `max_cost_usd: ${limit}`);
    const stopped = simulate(yaml(0.5), { costPerAttempt: 250_000 }).state;
    expect(stopped.tasks.t2!.status).toBe("pending");
    const raised = yaml(1);
    const { state, effects } = resumeRun(createEngine(raised), raised, stopped, 10);
    expect(state.budget!.run.spentMicros).toBe(250_000);
    expect(dispatches(effects).map((d) => [d.task, d.capMicros])).toEqual([["t2", 750_000]]);
  });

  it("refuses raises that cannot apply, changing nothing", () => {
    const engine = createEngine(graph);
    const { state } = engine.start(0);
    const before = JSON.stringify(state);
    const replies = [
      { micros: 1_000_000, target: "nope" },
      { micros: 1_000_000, target: "ws_a" }, // no budget of its own
      { micros: -1 },
      { micros: 1e303 },
      { micros: 0.5 }, // a dollar amount where micro-dollars belong
    ].flatMap((c, i) =>
      engine.apply(state, { type: "command", command: "budget", id: `c${i}`, at: 5, ...c }),
    );
    expect(replies.map((r) => (r.type === "reply" ? r.message : r.type))).toEqual([
      "no workstream or task 'nope'",
      "workstream 'ws_a' has no budget (max_cost_usd) to raise",
      "say how much to add: a plain decimal number of US dollars greater than 0 and at most 1000000, e.g. 5 or 0.50",
      "say how much to add: a plain decimal number of US dollars greater than 0 and at most 1000000, e.g. 5 or 0.50",
      "say how much to add: a plain decimal number of US dollars greater than 0 and at most 1000000, e.g. 5 or 0.50",
    ]);
    expect(JSON.stringify(state)).toBe(before);
  });

  it("never lets raises take a budget past $1,000,000,000, so that spend and limits stay finite", () => {
    const engine = createEngine(graph);
    const { state } = engine.start(0);
    const replies = Array.from({ length: 1001 }, (_, i) =>
      engine.apply(state, {
        type: "command",
        command: "budget",
        id: `r${i}`,
        micros: 1_000_000_000_000,
        at: 5 + i,
      }),
    ).map((effects) => effects.find((e) => e.type === "reply"));
    expect(replies.filter((r) => r?.type === "reply" && r.ok)).toHaveLength(999);
    expect(replies.at(-1)).toMatchObject({
      ok: false,
      message: "the run's budget would pass $1,000,000,000.00: raise it by less",
    });
    expect(Number.isSafeInteger(state.budget!.run.raisedMicros)).toBe(true);
  });

  it("starts the attempt that fits exactly: two tasks, max_cost_usd 0.7, each attempt $0.40", () => {
    // With floats, 0.7 - 0.4 is 0.29999999999999993, less than the floor ($0.30): the second task
    // waited for a raise while its budget held exactly what it needs.
    const two = graphOf([{ id: "t1" }, { id: "t2", deps: ["t1"] }], undefined, "max_cost_usd: 0.7");
    const { state, outcome } = simulate(two, { costPerAttempt: 400_000 });
    expect(state.tasks.t2!.attempts.map((a) => a.capMicros)).toEqual([300_000]);
    expect(state.budget!.run.spentMicros).toBe(700_000);
    expect(outcome).toBe("waiting_for_budget");
    expect(Object.values(state.budget!.spent)).toEqual(["budget spent: $0.70 of $0.70 for the run"]);
  });
});

/** Micro-dollars as a graph file writes them: a plain decimal. */
const decimal = (micros: number) => (micros / 1_000_000).toFixed(6);

describe("budgets over random amounts, floors and costs", () => {
  // Amounts to the micro-dollar; budgets are the floor plus a whole number of attempts' costs plus
  // some change, so that exact fits (what floats got wrong) come up often.
  const scenario = fc
    .record({
      tasks: fc.array(fc.record({ ws: fc.nat({ max: 3 }), deps: fc.array(fc.nat(), { maxLength: 2 }) }), {
        minLength: 1,
        maxLength: 10,
      }),
      concurrency: fc.integer({ min: 1, max: 4 }),
      attempts: fc.integer({ min: 1, max: 2 }),
      cost: fc.integer({ min: 1, max: 2_000_000 }),
      floor: fc.option(fc.integer({ min: 1, max: 1_000_000 })),
      model: fc.constantFrom(null, "claude-haiku-4-5", "claude-opus-4-1", "sonnet"),
      runAttempts: fc.option(fc.nat({ max: 6 })),
      wsAttempts: fc.array(fc.option(fc.nat({ max: 4 })), { minLength: 4, maxLength: 4 }),
      taskAttempts: fc.option(fc.nat({ max: 3 })),
      change: fc.oneof(fc.constant(0), fc.integer({ min: -1, max: 1 }), fc.integer({ min: 0, max: 500_000 })),
      conflicts: fc.nat({ max: 2 }),
    })
    .map((s) => {
      const floors: Record<string, number> = { "claude-haiku-4-5": 100_000, "claude-opus-4-1": 1_500_000 };
      const floor = s.floor ?? floors[s.model ?? ""] ?? 300_000;
      // At least the floor, so that the graph is valid (a budget below it is refused).
      const limit = (n: number | null) =>
        n === null ? null : Math.max(floor, floor + n * s.cost + s.change);
      return {
        ...s,
        floorMicros: floor,
        runLimit: limit(s.runAttempts),
        wsLimits: s.wsAttempts.map(limit),
        taskLimit: limit(s.taskAttempts),
      };
    });

  it("starts every attempt that fits, never one below its floor, and never spends past a budget", () => {
    fc.assert(
      fc.property(scenario, (s) => {
        const used = [...new Set(s.tasks.map((t) => t.ws))];
        const g = graphOf(
          s.tasks.map((t, i) => ({
            id: `t${i}`,
            ws: `w${t.ws}`,
            deps: [...new Set(t.deps.filter((d) => d < i).map((d) => `t${d}`))],
            ...(i === 0 && s.taskLimit !== null ? { extra: `max_cost_usd: ${decimal(s.taskLimit)}` } : {}),
          })),
          used.map((w) => ({
            id: `w${w}`,
            autoMerge: true,
            ...(s.wsLimits[w] !== null ? { extra: `max_cost_usd: ${decimal(s.wsLimits[w]!)}` } : {}),
          })),
          [
            `max_concurrency: ${s.concurrency}`,
            `max_task_attempts: ${s.attempts}`,
            ...(s.runLimit !== null ? [`max_cost_usd: ${decimal(s.runLimit)}`] : []),
            ...(s.floor !== null ? [`min_attempt_cost_usd: ${decimal(s.floor)}`] : []),
            ...(s.model ? [`model: ${s.model}`] : []),
          ].join("\n"),
        );
        const conflicts = new Map(s.conflicts ? [["t0", s.conflicts]] : []);
        const { state, outcome } = simulate(g, { costPerAttempt: s.cost, taskConflicts: conflicts });
        const spentOf = (ids: string[]) =>
          ids
            .flatMap((id) => {
              const t = state.tasks[id]!;
              return [...t.attempts, ...(t.conflict?.resolutions ?? [])].map((a) => a.costMicros ?? 0);
            })
            .reduce((a, b) => a + b, 0);
        const ids = Object.keys(state.tasks);
        const inWs = (w: number) => g.tasks.filter((t) => t.workstreamId === `w${w}`).map((t) => t.id);
        // What each budget has left, counted from the records (not from the engine's own sums).
        const runLeft = s.runLimit === null ? Infinity : s.runLimit - spentOf(ids);
        const wsLeft = (w: number) => (s.wsLimits[w] == null ? Infinity : s.wsLimits[w]! - spentOf(inWs(w)));
        const taskLeft = (id: string) =>
          id !== "t0" || s.taskLimit === null ? Infinity : s.taskLimit - spentOf([id]);
        // Spend never passes a budget (a simulated attempt spends at most its cap).
        expect(runLeft).toBeGreaterThanOrEqual(0);
        for (const w of used) expect(wsLeft(w)).toBeGreaterThanOrEqual(0);
        expect(taskLeft("t0")).toBeGreaterThanOrEqual(0);
        expect(state.budget?.run.spentMicros ?? 0).toBe(spentOf(ids));
        expect(state.budget?.run.reservedMicros ?? 0).toBe(0);
        const tasks = new Map(g.tasks.map((t) => [t.id, t]));
        for (const [id, t] of Object.entries(state.tasks)) {
          const floor = attemptFloorMicros(g, tasks.get(id)!);
          expect(floor).toBe(s.floorMicros);
          // No attempt starts below its floor.
          for (const a of [...t.attempts, ...(t.conflict?.resolutions ?? [])])
            if (a.capMicros != null) expect(a.capMicros).toBeGreaterThanOrEqual(floor);
          // No injected failure, no per-attempt limit: nothing fails or is blocked for a small share.
          expect(t.status).not.toMatch(/failed|blocked/);
        }
        // An attempt that fits is started: at rest, every task the scheduling rules would start
        // (capacity, one task per workstream, what it waits for) has a budget with less than its
        // floor left.
        const view: StatusView = {
          task: (id) => state.tasks[id]!.status,
          workstream: (w) => state.workstreams[w]!.status,
          workstreamFailedItself: (w) => state.workstreams[w]!.failedItself,
        };
        for (const id of tasksToDispatch(buildPlan(g), view, state.settings)) {
          const ws = Number(tasks.get(id)!.workstreamId.slice(1));
          expect(Math.min(runLeft, wsLeft(ws), taskLeft(id))).toBeLessThan(s.floorMicros);
        }
        expect(["succeeded", "waiting_for_budget", "waiting_for_review"]).toContain(outcome);
      }),
      { numRuns: 300 },
    );
  });
});
