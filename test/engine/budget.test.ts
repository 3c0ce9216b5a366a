import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createEngine } from "../../src/engine/engine.ts";
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

  it("never gives an attempt a share too small for one model turn: it waits for the running one", () => {
    const tight = graphOf(
      [
        { id: "a1", ws: "x" },
        { id: "b1", ws: "y" },
      ],
      [{ id: "x" }, { id: "y" }],
      "max_concurrency: 2\nmax_cost_usd: 0.0015",
    );
    const engine = createEngine(tight);
    const { state } = engine.start(0);
    const first = ["x", "y"].flatMap((workstream) =>
      engine.apply(state, { type: "workstream_prepared", workstream, at: 1 }),
    );
    // Half of $0.0015 is less than a turn: a1 gets a turn's worth, b1 waits.
    expect(dispatches(first).map((d) => [d.task, d.capUsd])).toEqual([["a1", 0.001]]);
    const after = engine.apply(state, {
      type: "job_failed",
      task: "a1",
      attempt: 1,
      reason: "x",
      costUsd: 0.0002,
      at: 2,
    });
    expect(dispatches(after).map((d) => [d.task, d.capUsd])).toEqual([["b1", 0.0013]]);
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
      "max_cost_usd: 0.5",
    );
    const result = simulate(small, { costPerAttempt: 0.25 });
    expect(result.outcome).toBe("waiting_for_budget");
    expect(result.state.tasks.t3!.status).toBe("pending");
    const json = simulationJson(result) as { events: { type: string; detail?: string }[]; spentUsd: number };
    expect(json.spentUsd).toBe(0.5);
    expect(json.events.filter((e) => e.type === "budget_exhausted")).toEqual([
      { type: "budget_exhausted", detail: "budget spent: $0.50 of $0.50 for the run" },
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
    const stopped = simulate(yaml(0.25), { costPerAttempt: 0.25 }).state;
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
    ].flatMap((c, i) =>
      engine.apply(state, { type: "command", command: "budget", id: `c${i}`, at: 5, ...c }),
    );
    expect(replies.map((r) => (r.type === "reply" ? r.message : r.type))).toEqual([
      "no workstream or task 'nope'",
      "workstream 'ws_a' has no budget (max_cost_usd) to raise",
      "say how much to add, e.g. budget +5",
    ]);
    expect(JSON.stringify(state)).toBe(before);
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
