/**
 * A simulated world for engine tests: it executes effects the way adapters do (idempotently, by key)
 * and hands events back through a delivery scheduler that may reorder, duplicate and delay them.
 */
import { leftToPerson } from "../../src/engine/conflicts.ts";
import { createEngine, type Engine } from "../../src/engine/engine.ts";
import { neededIntegration, simulatedResponse } from "../../src/engine/simulate.ts";
import type { EngineEffect, EngineEvent, RunState } from "../../src/engine/types.ts";
import type { Graph } from "../../src/graph/model.ts";

export interface WorldSpec {
  /** Task -> number of first attempts that fail. */
  failures: Record<string, number>;
  concerns: string[];
  /** Workstream -> number of first merges of its integration PR that conflict. */
  integrationConflicts?: Record<string, number>;
  /** Task -> number of first merges of its PR that conflict. */
  taskConflicts?: Record<string, number>;
}

export interface Delivery {
  /** Picks which in-flight event is delivered next (an index, taken modulo the pool size). */
  pick(poolSize: number): number;
  /** Whether to deliver the picked event again later as well. */
  duplicate(): boolean;
}

export const fifo: Delivery = { pick: () => 0, duplicate: () => false };

export interface WorldResult {
  state: RunState;
  violations: string[];
  dispatchKeys: string[];
  deliveries: number;
}

export function runWorld(
  graph: Graph,
  spec: WorldSpec,
  delivery: Delivery,
  maxDeliveries = 5_000,
  /** Called with the state after every event, for invariants of a test's own. */
  observe?: (state: RunState) => void,
): WorldResult {
  const engine: Engine = createEngine(graph);
  const violations: string[] = [];
  const dispatchKeys: string[] = [];
  const pool: EngineEvent[] = [];
  const prNumbers = new Map<string, number>();
  let clock = 0;
  const pr = (key: string) => {
    if (!prNumbers.has(key)) prNumbers.set(key, prNumbers.size + 1);
    const number = prNumbers.get(key)!;
    return { number, url: `https://github.com/o/r/pull/${number}` };
  };

  const check = (state: RunState, effects: EngineEffect[]) => {
    const perLane = new Map<string, number>();
    let active = 0;
    for (const [id, t] of Object.entries(state.tasks)) {
      if (t.status === "running" || t.status === "pr_open") {
        active++;
        const ws = engine.plan.tasks.get(id)!.workstreamId;
        perLane.set(ws, (perLane.get(ws) ?? 0) + 1);
      }
    }
    if (active > state.settings.maxConcurrency)
      violations.push(`${active} active tasks, limit ${state.settings.maxConcurrency}`);
    for (const [ws, n] of perLane) if (n > 1) violations.push(`${n} active tasks in workstream ${ws}`);
    for (const effect of effects) {
      if (effect.type === "resolve_conflicts") {
        if (dispatchKeys.includes(effect.key)) violations.push(`resolution ${effect.key} twice`);
        dispatchKeys.push(effect.key);
      }
      if (effect.type !== "dispatch") continue;
      if (dispatchKeys.includes(effect.key)) violations.push(`dispatched ${effect.key} twice`);
      dispatchKeys.push(effect.key);
      for (const dep of engine.plan.tasks.get(effect.task)!.dependencies) {
        const s = state.tasks[dep]!.status;
        if (s !== "merged" && s !== "completed")
          violations.push(`${effect.task} dispatched while ${dep} is ${s}`);
      }
      for (const up of engine.plan.upstreamWorkstreams.get(effect.task)!) {
        if (state.workstreams[up]!.status !== "merged")
          violations.push(`${effect.task} dispatched before workstream ${up} merged`);
      }
      for (const earlier of engine.plan.serialAfter.get(effect.task) ?? [])
        if (!["merged", "failed"].includes(state.workstreams[earlier.workstream]!.status))
          violations.push(`${effect.task} dispatched before workstream ${earlier.workstream} landed`);
    }
  };

  const simulated = {
    failures: new Map(Object.entries(spec.failures)),
    concerns: new Set(spec.concerns),
    integrationConflicts: new Map(Object.entries(spec.integrationConflicts ?? {})),
    taskConflicts: new Map(Object.entries(spec.taskConflicts ?? {})),
  };
  const execute = (effect: EngineEffect) => pool.push(...simulatedResponse(effect, simulated, ++clock, pr));

  const started = engine.start(0);
  let state = started.state;
  check(state, started.effects);
  started.effects.forEach(execute);
  let deliveries = 0;
  for (;;) {
    while (pool.length > 0 && deliveries < maxDeliveries) {
      const index = delivery.pick(pool.length) % pool.length;
      const event = pool[index]!;
      if (!delivery.duplicate()) pool.splice(index, 1);
      deliveries++;
      // Applied as the driver does, so that stores writing only the touched tasks lose nothing.
      const next = structuredClone(state);
      const touched = new Set<string>();
      const effects = engine.apply(next, { ...event, at: ++clock }, touched);
      for (const id of Object.keys(next.tasks))
        if (!touched.has(id) && JSON.stringify(next.tasks[id]) !== JSON.stringify(state.tasks[id]))
          violations.push(`${event.type} changed task ${id} without touching it`);
      state = next;
      check(state, effects);
      observe?.(state);
      effects.forEach(execute);
    }
    if (state.outcome !== null || deliveries >= maxDeliveries) break;
    // A person merges a task PR whose conflicts were left to them.
    const waiting = Object.entries(state.tasks).find(([, t]) => leftToPerson(t));
    if (waiting) {
      const [task, t] = waiting;
      pool.push({ type: "task_pr_merged", task, pr: t.pr!, at: ++clock });
      continue;
    }
    // A reviewer merges an open integration PR that pending work waits for, then any other one left
    // for review (the run is not over while one waits).
    const waitedFor =
      neededIntegration(state, engine.plan.upstreamWorkstreams) ??
      Object.keys(state.workstreams).find((w) => state.workstreams[w]!.status === "pr_open");
    if (!waitedFor) break;
    pool.push({ type: "integration_pr_merged", workstream: waitedFor, at: ++clock });
  }
  return { state, violations, dispatchKeys, deliveries };
}

/** What must not depend on delivery order: statuses, attempt counts, outcome. */
export function summary(state: RunState): object {
  return {
    outcome: state.outcome,
    tasks: Object.fromEntries(
      Object.entries(state.tasks).map(([id, t]) => [id, `${t.status}/${t.attempt}/${t.concerns.length}`]),
    ),
    workstreams: Object.fromEntries(Object.entries(state.workstreams).map(([id, w]) => [id, w.status])),
  };
}
