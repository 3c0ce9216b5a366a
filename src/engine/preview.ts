/**
 * What a new run of a graph starts with, as the engine itself decides it: the plan comment says it
 * before anything runs, so it can only promise what will happen (a budget that holds back the second
 * attempt included). The engine starts, its workstreams are prepared, and its first dispatches are
 * read off; nothing else is answered.
 */
import type { Micros } from "../graph/amount.ts";
import type { Graph } from "../graph/model.ts";
import type { Plan } from "../plan/model.ts";
import { type StatusView, tasksToDispatch } from "../plan/readiness.ts";
import { createEngine } from "./engine.ts";
import type { EngineEffect } from "./types.ts";

export interface FirstDispatches {
  /** The first attempts, in the order they start, with what each may spend (null: no budget). */
  dispatched: { task: string; capMicros: Micros | null }[];
  /** Tasks ready at once that wait, for what the first attempts hold of a budget or for a raise. */
  held: string[];
  /** Why they wait, when a budget is spent (the engine's words); empty when they wait for a give-back. */
  spent: string[];
}

/** Statuses before anything started. */
const NOTHING_STARTED: StatusView = {
  task: () => "pending",
  workstream: () => "pending",
  workstreamFailedItself: () => false,
};

const budgeted = (graph: Graph) =>
  graph.settings.maxCostMicros !== null ||
  graph.settings.maxAttemptCostMicros !== null ||
  graph.workstreams.some((w) => w.maxCostMicros !== null) ||
  graph.tasks.some((t) => t.maxCostMicros !== null || t.maxAttemptCostMicros !== null);

export function firstDispatches(plan: Plan): FirstDispatches {
  const { graph } = plan;
  // Without a budget, the rules of readiness alone say it (starting an engine costs more at scale).
  if (!budgeted(graph))
    return {
      dispatched: tasksToDispatch(plan, NOTHING_STARTED, graph.settings).map((task) => ({
        task,
        capMicros: null,
      })),
      held: [],
      spent: [],
    };
  const engine = createEngine(graph);
  const { state, effects } = engine.start(0);
  const dispatched: FirstDispatches["dispatched"] = [];
  const queue: EngineEffect[] = [...effects];
  for (let effect = queue.shift(); effect; effect = queue.shift()) {
    if (effect.type === "prepare_workstream")
      queue.push(
        ...engine.apply(state, { type: "workstream_prepared", workstream: effect.workstream, at: 0 }),
      );
    else if (effect.type === "dispatch")
      dispatched.push({ task: effect.task, capMicros: effect.capMicros ?? null });
  }
  const started = new Set(dispatched.map((d) => d.task));
  const ready = tasksToDispatch(engine.plan, NOTHING_STARTED, graph.settings);
  return {
    dispatched,
    held: ready.filter((id) => !started.has(id)),
    spent: Object.values(state.budget?.spent ?? {}),
  };
}
