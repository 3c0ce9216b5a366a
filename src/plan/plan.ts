/**
 * Planning: the canonical task order and everything derived from the graph's shape that scheduling
 * needs, computed once per graph.
 */
import { type Graph, NONE, type Task, type Workstream } from "../graph/model.ts";
import { dependencyLevels, kahnOrder, positionsById, topology } from "../graph/topology.ts";
import { serialWaits } from "./overlaps.ts";

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

/** Canonical order; the graph must be acyclic (the loader guarantees it). */
export function canonicalOrder(graph: Graph): string[] {
  return Array.from(kahnOrder(graph), (i) => graph.tasks[i]!.id);
}

export function buildPlan(graph: Graph): Plan {
  const topo = topology(graph);
  const positions = kahnOrder(graph, topo);
  const order = Array.from(positions, (i) => graph.tasks[i]!.id);
  const rank = new Map<string, number>();
  order.forEach((id, r) => rank.set(id, r));
  const tasks = new Map(graph.tasks.map((t) => [t.id, t]));
  const workstreams = new Map(graph.workstreams.map((w) => [w.id, w]));

  // Longest-path layer of each task, then each layer in id order (the canonical order is not).
  const depth = dependencyLevels(graph, topo)!;
  let layers = 0;
  for (const level of depth) layers = Math.max(layers, level + 1);
  const waves: string[][] = Array.from({ length: layers }, () => []);
  // Visiting tasks by id fills each wave and each dependents list already sorted.
  const dependentLists: string[][] = graph.tasks.map(() => []);
  for (const i of positionsById(graph, topo)) {
    const id = graph.tasks[i]!.id;
    waves[depth[i]!]!.push(id);
    for (let k = topo.depStart[i]!; k < topo.depStart[i + 1]!; k++) dependentLists[topo.deps[k]!]!.push(id);
  }

  const tasksByWorkstream = new Map<string, string[]>(graph.workstreams.map((w) => [w.id, []]));
  const dependents = new Map<string, string[]>();
  const upstreamWorkstreams = new Map<string, string[]>();
  for (const i of positions) {
    const task = graph.tasks[i]!;
    tasksByWorkstream.get(task.workstreamId)!.push(task.id);
    dependents.set(task.id, dependentLists[i]!);
    // A set only for tasks with dependencies in other workstreams (a list grown by copying was quadratic
    // for a task that depends on thousands of workstreams).
    let upstream: Set<string> | null = null;
    for (let k = topo.depStart[i]!; k < topo.depStart[i + 1]!; k++) {
      const ws = graph.tasks[topo.deps[k]!]!.workstreamId;
      if (ws !== task.workstreamId) (upstream ??= new Set()).add(ws);
    }
    upstreamWorkstreams.set(task.id, upstream ? [...upstream].sort() : NONE);
  }

  const plan: Plan = {
    graph,
    order,
    rank,
    tasks,
    workstreams,
    waves,
    tasksByWorkstream,
    dependents,
    upstreamWorkstreams,
    serialAfter: new Map(),
  };
  plan.serialAfter = serialWaits(plan);
  return plan;
}
