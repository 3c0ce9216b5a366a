/**
 * The plan's shape: what scheduling reads of a graph, computed once per graph (plan.ts builds it).
 * Its own module so that the parts that fill it (overlaps.ts) and those that read it import it
 * without importing the builder.
 */
import type { Graph, Task, Workstream } from "../graph/model.ts";

export interface Plan {
  graph: Graph;
  /** Canonical topological order: Kahn's algorithm with the ready set ordered by task id. */
  order: string[];
  /** Position of each task in `order`. */
  rank: Map<string, number>;
  tasks: Map<string, Task>;
  workstreams: Map<string, Workstream>;
  /** Groups of tasks that could run together if capacity and workstreams allowed (longest-path layers). */
  waves: string[][];
  /** Tasks of each workstream in canonical order. */
  tasksByWorkstream: Map<string, string[]>;
  /** Direct dependents of each task, sorted by id. */
  dependents: Map<string, string[]>;
  /** Workstreams of a task's direct dependencies that live in other workstreams, sorted. */
  upstreamWorkstreams: Map<string, string[]>;
  /**
   * With `overlaps: serialize`: what a task waits for before it starts, each an earlier task it
   * overlaps and that task's workstream, to land (merged; or failed, once the task is over).
   */
  serialAfter: Map<string, { task: string; workstream: string }[]>;
}

/**
 * A workstream's ancestors, nearest first. Walked when asked rather than listed per workstream in the
 * plan: a hierarchy thousands deep would make those lists quadratic in size.
 */
export function* ancestorsOf(plan: Plan, ws: string): Generator<string> {
  for (let p = plan.workstreams.get(ws)!.parentId; p !== null; p = plan.workstreams.get(p)!.parentId) yield p;
}
