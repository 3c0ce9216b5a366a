import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createEngine } from "../../src/engine/engine.ts";
import { attemptFloorUsd } from "../../src/engine/attempt-floor.ts";
import { usd } from "../../src/engine/budget.ts";
import { resumeRun } from "../../src/engine/resume.ts";
import { simulate, simulationJson } from "../../src/engine/simulate.ts";
import type { EngineEffect, EngineEvent, RunState } from "../../src/engine/types.ts";
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
    { id: "c2", ws: "ws_c", deps: ["c1"], extra: "max_cost_usd: 0.5\nmax_attempt_cost_usd: 0.2" },
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
    const caps = Object.fromEntries(dispatches([...effects, ...prepared]).map((d) => [d.task, d.capUsd]));
    // $2 shared three ways as three workstreams may start; ws_b holds at most $0.60, so the last
    // to start has the rest: the caps add up to the run's budget, never more.
    expect(caps).toEqual({ a1: 0.666666, b1: 0.6, c1: 0.733334 });
    expect(state.budget!.run.reservedUsd).toBe(2);
    expect(state.tasks.b1!.attempts[0]!.capUsd).toBe(0.6);
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
    expect(dispatches(first).map((d) => [d.task, d.capUsd])).toEqual([["a1", 0.3]]);
    const after = engine.apply(state, {
      type: "job_failed",
      task: "a1",
      attempt: 1,
      reason: "x",
      costUsd: 0.1,
      at: 2,
    });
    expect(dispatches(after).map((d) => [d.task, d.capUsd])).toEqual([["b1", 0.4]]);
  });

  it.each([
    ["", 0.3],
    ["model: claude-opus-4-1", 1.5],
    ["model: claude-opus-4-5", 0.5],
    ["model: claude-haiku-4-5", 0.1],
    ["model: haiku\nmin_attempt_cost_usd: 0.02", 0.02],
  ])("the floor with %j is $%d, and less left waits as a spent budget does", (head, floor) => {
    const g = graphOf([{ id: "t1" }, { id: "t2", deps: ["t1"] }], undefined, `max_cost_usd: 2\n${head}`);
    const engine = createEngine(g);
    const { state } = engine.start(0);
    const first = dispatches(
      engine.apply(state, { type: "workstream_prepared", workstream: "default", at: 1 }),
    );
    expect(first.map((d) => d.capUsd)).toEqual([2]);
    // t1 spends all but a little less than the floor: t2 does not start, and the run says why.
    const spent = Math.round((2 - floor + 0.001) * 1e6) / 1e6;
    engine.apply(state, { type: "job_succeeded", task: "t1", attempt: 1, costUsd: spent, at: 2 });
    engine.apply(state, { type: "task_pr_opened", task: "t1", pr: { number: 1, url: "u" }, at: 3 });
    expect(
      dispatches(
        engine.apply(state, { type: "task_pr_merged", task: "t1", pr: { number: 1, url: "u" }, at: 4 }),
      ),
    ).toEqual([]);
    expect(Object.values(state.budget!.spent)).toEqual([
      `budget spent: ${usd(spent)} of $2.00 for the run, ${usd(2 - spent)} left, less than an attempt's ${usd(floor)}`,
    ]);
    expect(state.tasks.t2!.status).toBe("pending");
  });

  it("counts what failed and cancelled attempts spent, and gives back what running ones held", () => {
    const engine = createEngine(graph);
    const { state } = engine.start(0);
    for (const workstream of ["ws_a", "ws_b", "ws_c"])
      engine.apply(state, { type: "workstream_prepared", workstream, at: 1 });
    engine.apply(state, { type: "job_failed", task: "a1", attempt: 1, reason: "x", costUsd: 0.3, at: 2 });
    engine.apply(state, { type: "command", command: "cancel", task: "b1", at: 3 });
    // The cancelled attempt reports what it spent after the cancel.
    engine.apply(state, {
      type: "job_failed",
      task: "b1",
      attempt: 1,
      kind: "cancelled",
      reason: "cancelled",
      costUsd: 0.1,
      at: 4,
    });
    expect(state.budget!.run.spentUsd).toBe(0.4);
    expect(state.budget!.workstreams.ws_b!.spentUsd).toBe(0.1);
    expect(state.budget!.workstreams.ws_b!.reservedUsd).toBe(0);
    // Held now: c1's cap and a1's retry's.
    const held = ["a1", "c1"].map((id) => state.tasks[id]!.attempts.at(-1)!.capUsd!);
    expect(state.budget!.run.reservedUsd).toBeCloseTo(held[0]! + held[1]!, 6);
  });

  it("waits when a budget is spent, says so once, and resumes exactly once when it is raised", () => {
    const small = graphOf(
      [{ id: "t1" }, { id: "t2", deps: ["t1"] }, { id: "t3", deps: ["t2"] }],
      undefined,
      "max_cost_usd: 1",
    );
    const result = simulate(small, { costPerAttempt: 0.5 });
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
      usd: 1,
      id: "comment-7",
      by: "ann",
      at: 99,
    };
    const first = engine.apply(state, raise);
    const again = engine.apply(state, { ...raise, at: 100 });
    expect(dispatches(first).map((d) => [d.task, d.capUsd])).toEqual([["t3", 1]]);
    expect(again).toEqual([]);
    expect(first).toContainEqual(expect.objectContaining({ type: "reply", ok: true }));
    expect(state.budget!.spent).toEqual({});
  });

  it("keeps what was spent when a changed graph resumes the run, and goes on under its new limits", () => {
    const yaml = (limit: number) =>
      graphOf([{ id: "t1" }, { id: "t2", deps: ["t1"] }], undefined, `max_cost_usd: ${limit}`);
    const stopped = simulate(yaml(0.5), { costPerAttempt: 0.25 }).state;
    expect(stopped.tasks.t2!.status).toBe("pending");
    const raised = yaml(1);
    const { state, effects } = resumeRun(createEngine(raised), raised, stopped, 10);
    expect(state.budget!.run.spentUsd).toBe(0.25);
    expect(dispatches(effects).map((d) => [d.task, d.capUsd])).toEqual([["t2", 0.75]]);
  });

  it("refuses raises that cannot apply, changing nothing", () => {
    const engine = createEngine(graph);
    const { state } = engine.start(0);
    const before = JSON.stringify(state);
    const replies = [
      { usd: 1, target: "nope" },
      { usd: 1, target: "ws_a" }, // no budget of its own
      { usd: -1 },
      { usd: 1e303 },
    ].flatMap((c, i) =>
      engine.apply(state, { type: "command", command: "budget", id: `c${i}`, at: 5, ...c }),
    );
    expect(replies.map((r) => (r.type === "reply" ? r.message : r.type))).toEqual([
      "no workstream or task 'nope'",
      "workstream 'ws_a' has no budget (max_cost_usd) to raise",
      "say how much to add: a plain decimal number of US dollars greater than 0 and at most 1000000, e.g. 5 or 0.50",
      "say how much to add: a plain decimal number of US dollars greater than 0 and at most 1000000, e.g. 5 or 0.50",
    ]);
    expect(JSON.stringify(state)).toBe(before);
  });

  it("never lets raises take a budget past $1,000,000,000, so that spend and limits stay finite", () => {
    const engine = createEngine(graph);
    const { state } = engine.start(0);
    const replies = Array.from({ length: 1001 }, (_, i) =>
      engine.apply(state, { type: "command", command: "budget", id: `r${i}`, usd: 1_000_000, at: 5 + i }),
    ).map((effects) => effects.find((e) => e.type === "reply"));
    expect(replies.filter((r) => r?.type === "reply" && r.ok)).toHaveLength(999);
    expect(replies.at(-1)).toMatchObject({
      ok: false,
      message: "the run's budget would pass $1,000,000,000.00: raise it by less",
    });
    expect(Number.isFinite(state.budget!.run.raisedUsd)).toBe(true);
  });

  it("never spends past a budget: what attempts spend stays within their caps", () => {
    fc.assert(
      fc.property(
        fc.record({
          cost: fc.double({ min: 0.01, max: 1, noNaN: true }),
          runLimit: fc.double({ min: 0.05, max: 3, noNaN: true }),
          wsLimit: fc.double({ min: 0.05, max: 2, noNaN: true }),
          concurrency: fc.integer({ min: 1, max: 4 }),
        }),
        ({ cost, runLimit, wsLimit, concurrency }) => {
          const g = graphOf(
            Array.from({ length: 8 }, (_, i) => ({
              id: `t${i}`,
              ws: `w${i % 3}`,
              deps: i >= 3 ? [`t${i - 3}`] : [],
            })),
            [0, 1, 2].map((i) => ({
              id: `w${i}`,
              autoMerge: true,
              ...(i === 1 ? { extra: `max_cost_usd: ${wsLimit}` } : {}),
            })),
            `max_concurrency: ${concurrency}\nmax_task_attempts: 2\nmax_cost_usd: ${runLimit}`,
          );
          const { state } = simulate(g, { costPerAttempt: cost });
          const spent = Object.values(state.tasks).flatMap((t) => t.attempts.map((a) => a.costUsd ?? 0));
          const total = spent.reduce((a, b) => a + b, 0);
          // Amounts are kept to the millionth of a dollar.
          expect(total).toBeLessThanOrEqual(runLimit + 1e-6);
          const w1 = Object.entries(state.tasks)
            .filter(([id]) => Number(id.slice(1)) % 3 === 1)
            .flatMap(([, t]) => t.attempts.map((a) => a.costUsd ?? 0))
            .reduce((a, b) => a + b, 0);
          expect(w1).toBeLessThanOrEqual(wsLimit + 1e-6);
          expect(state.budget?.run.spentUsd ?? 0).toBeCloseTo(total, 5);
          expect(state.budget?.run.reservedUsd ?? 0).toBe(0);
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe("the attempt floor, over random graphs and budgets", () => {
  const dollars = (min: number, max: number) =>
    fc.integer({ min: Math.round(min * 100), max: Math.round(max * 100) }).map((c) => c / 100);
  const scenario = fc.record({
    tasks: fc.array(fc.record({ ws: fc.nat({ max: 3 }), deps: fc.array(fc.nat(), { maxLength: 2 }) }), {
      minLength: 1,
      maxLength: 10,
    }),
    concurrency: fc.integer({ min: 1, max: 4 }),
    attempts: fc.integer({ min: 1, max: 2 }),
    cost: dollars(0.01, 2),
    runLimit: fc.option(dollars(0.05, 6)),
    wsLimits: fc.array(fc.option(dollars(0.05, 3)), { minLength: 4, maxLength: 4 }),
    taskLimit: fc.option(dollars(0.05, 3)),
    floor: fc.option(dollars(0.01, 1)),
    model: fc.constantFrom(null, "claude-haiku-4-5", "claude-opus-4-1", "sonnet"),
    conflicts: fc.nat({ max: 2 }),
  });

  it("no attempt starts below the floor, no task fails for a small share, and spend stays within budgets", () => {
    fc.assert(
      fc.property(scenario, (s) => {
        const used = [...new Set(s.tasks.map((t) => t.ws))];
        const g = graphOf(
          s.tasks.map((t, i) => ({
            id: `t${i}`,
            ws: `w${t.ws}`,
            deps: [...new Set(t.deps.filter((d) => d < i).map((d) => `t${d}`))],
            ...(i === 0 && s.taskLimit !== null ? { extra: `max_cost_usd: ${s.taskLimit}` } : {}),
          })),
          used.map((w) => ({
            id: `w${w}`,
            autoMerge: true,
            ...(s.wsLimits[w] !== null ? { extra: `max_cost_usd: ${s.wsLimits[w]}` } : {}),
          })),
          [
            `max_concurrency: ${s.concurrency}`,
            `max_task_attempts: ${s.attempts}`,
            ...(s.runLimit !== null ? [`max_cost_usd: ${s.runLimit}`] : []),
            ...(s.floor !== null ? [`min_attempt_cost_usd: ${s.floor}`] : []),
            ...(s.model ? [`model: ${s.model}`] : []),
          ].join("\n"),
        );
        const conflicts = new Map(s.conflicts ? [["t0", s.conflicts]] : []);
        const { state, outcome } = simulate(g, { costPerAttempt: s.cost, taskConflicts: conflicts });
        const tasks = new Map(g.tasks.map((t) => [t.id, t]));
        for (const [id, t] of Object.entries(state.tasks)) {
          const floor = attemptFloorUsd(g, tasks.get(id)!);
          const caps = [...t.attempts, ...(t.conflict?.resolutions ?? [])].map((a) => a.capUsd);
          for (const cap of caps) if (cap != null) expect(cap).toBeGreaterThanOrEqual(floor);
          // No own per-attempt limit, no injected failure: nothing fails or is blocked.
          expect(t.status).not.toMatch(/failed|blocked/);
        }
        expect(["succeeded", "waiting_for_budget", "waiting_for_review"]).toContain(outcome);
        const spent = (ids: string[]) =>
          ids.flatMap((id) => {
            const t = state.tasks[id]!;
            return [...t.attempts, ...(t.conflict?.resolutions ?? [])].map((a) => a.costUsd ?? 0);
          });
        const total = spent(Object.keys(state.tasks)).reduce((a, b) => a + b, 0);
        if (s.runLimit !== null) expect(total).toBeLessThanOrEqual(s.runLimit + 1e-6);
        for (const w of used) {
          const limit = s.wsLimits[w];
          const own = g.tasks.filter((t) => t.workstreamId === `w${w}`).map((t) => t.id);
          if (limit != null) expect(spent(own).reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(limit + 1e-6);
        }
        expect(state.budget?.run.reservedUsd ?? 0).toBe(0);
      }),
      { numRuns: 300 },
    );
  });
});
