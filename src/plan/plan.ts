/**
 * Planning: the canonical task order and everything derived from the graph's shape that scheduling
 * needs, computed once per graph.
 */
import { type Graph, NONE } from "../graph/model.ts";
import { dependencyLevels, kahnOrder, positionsById, topology } from "../graph/topology.ts";
import type { Plan } from "./model.ts";
import { serialWaits, serialWaves } from "./overlaps.ts";

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
  plan.waves = serialWaves(plan);
  return plan;
}
