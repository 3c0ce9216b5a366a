/**
 * Planning: the canonical task order and everything derived from the graph's shape that scheduling
 * needs, computed once per graph.
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
  /** Groups of tasks that could run together if capacity and lanes allowed (longest-path layers). */
  waves: string[][];
  /** Tasks of each workstream in canonical order. */
  tasksByWorkstream: Map<string, string[]>;
  /** Direct dependents of each task, sorted by id. */
  dependents: Map<string, string[]>;
  /** Workstreams of a task's direct dependencies that live in other workstreams, sorted. */
  upstreamWorkstreams: Map<string, string[]>;
  /** Ancestors of each workstream, nearest first. */
  ancestors: Map<string, string[]>;
}

/** A binary min-heap of strings in code-point order (ids are ASCII, so `<` is code-point order). */
class IdHeap {
  private readonly items: string[] = [];
  get size(): number {
    return this.items.length;
  }
  push(id: string): void {
    const a = this.items;
    a.push(id);
    let i = a.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (a[parent]! <= a[i]!) break;
      [a[parent], a[i]] = [a[i]!, a[parent]!];
      i = parent;
    }
  }
  pop(): string {
    const a = this.items;
    const top = a[0]!;
    const last = a.pop()!;
    if (a.length > 0) {
      a[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < a.length && a[l]! < a[m]!) m = l;
        if (r < a.length && a[r]! < a[m]!) m = r;
        if (m === i) break;
        [a[m], a[i]] = [a[i]!, a[m]!];
        i = m;
      }
    }
    return top;
  }
}

/** Canonical order; the graph must be acyclic (the loader guarantees it). */
export function canonicalOrder(graph: Graph): string[] {
  const remaining = new Map<string, number>();
  const dependents = new Map<string, string[]>();
  for (const task of graph.tasks) {
    remaining.set(task.id, task.dependencies.length);
    for (const dep of task.dependencies) {
      const list = dependents.get(dep);
      if (list) list.push(task.id);
      else dependents.set(dep, [task.id]);
    }
  }
  const ready = new IdHeap();
  for (const [id, count] of remaining) if (count === 0) ready.push(id);
  const order: string[] = [];
  while (ready.size > 0) {
    const id = ready.pop();
    order.push(id);
    for (const child of dependents.get(id) ?? []) {
      const left = remaining.get(child)! - 1;
      remaining.set(child, left);
      if (left === 0) ready.push(child);
    }
  }
  return order;
}

export function buildPlan(graph: Graph): Plan {
  const order = canonicalOrder(graph);
  const rank = new Map(order.map((id, i) => [id, i]));
  const tasks = new Map(graph.tasks.map((t) => [t.id, t]));
  const workstreams = new Map(graph.workstreams.map((w) => [w.id, w]));

  const depth = new Map<string, number>();
  const waves: string[][] = [];
  const tasksByWorkstream = new Map<string, string[]>(graph.workstreams.map((w) => [w.id, []]));
  const dependents = new Map<string, string[]>(order.map((id) => [id, []]));
  const upstreamWorkstreams = new Map<string, string[]>();

  for (const id of order) {
    const task = tasks.get(id)!;
    let level = 0;
    const upstream = new Set<string>();
    for (const dep of task.dependencies) {
      level = Math.max(level, depth.get(dep)! + 1);
      dependents.get(dep)!.push(id);
      const depWs = tasks.get(dep)!.workstreamId;
      if (depWs !== task.workstreamId) upstream.add(depWs);
    }
    depth.set(id, level);
    const wave = waves[level];
    if (wave) wave.push(id);
    else waves[level] = [id];
    tasksByWorkstream.get(task.workstreamId)!.push(id);
    upstreamWorkstreams.set(id, [...upstream].sort());
  }
  for (const list of dependents.values()) list.sort();
  for (const wave of waves) wave.sort();

  const ancestors = new Map<string, string[]>();
  for (const ws of graph.workstreams) {
    const chain: string[] = [];
    for (let p = ws.parentId; p !== null; p = workstreams.get(p)?.parentId ?? null) chain.push(p);
    ancestors.set(ws.id, chain);
  }

  return {
    graph,
    order,
    rank,
    tasks,
    workstreams,
    waves,
    tasksByWorkstream,
    dependents,
    upstreamWorkstreams,
    ancestors,
  };
}
