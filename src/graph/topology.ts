/**
 * The dependency structure of a graph as integers: task i is `graph.tasks[i]`, and its dependencies
 * are positions too. Validation and planning walk tens of thousands of edges; doing it on typed
 * arrays instead of maps keyed by id strings is what keeps a 10,000-task graph fast to load.
 *
 * Computed once per Graph object (graphs are not changed after loading) and shared by the checks
 * that need it and by the plan.
 */
import { keepHiddenClass } from "./hidden-class.ts";
import type { Graph } from "./model.ts";

export interface Topology {
  /** Position of each task id in `graph.tasks`. */
  index: Map<string, number>;
  /** Dependencies of task i are `deps[depStart[i]] .. deps[depStart[i + 1] - 1]`; -1 is an unknown id. */
  depStart: Int32Array;
  deps: Int32Array;
  /** Dependents of task i are `dependents[dependentStart[i]] .. dependents[dependentStart[i + 1] - 1]`, in declaration order. */
  dependentStart: Int32Array;
  dependents: Int32Array;
  /** Position of each task's workstream in `graph.workstreams` (-1 when it names none declared). */
  workstreamOf: Int32Array;
}

const computed = new WeakMap<Graph, Topology>();
const sortedById = new WeakMap<Graph, Int32Array>();
const levelsOf = new WeakMap<Graph, Int32Array | null>();

/**
 * The graph's topology. The loader reports unknown dependencies from it, so a graph it returns has none.
 * It passes the first position of each id, which it built to find duplicates.
 */
export function topology(graph: Graph, index?: Map<string, number>): Topology {
  let known = computed.get(graph);
  if (!known) {
    known = build(graph, index ?? firstPositions(graph));
    computed.set(graph, known);
  }
  return known;
}

function firstPositions(graph: Graph): Map<string, number> {
  const index = new Map<string, number>();
  graph.tasks.forEach((t, i) => {
    if (!index.has(t.id)) index.set(t.id, i);
  });
  return index;
}

function build(graph: Graph, index: Map<string, number>): Topology {
  const tasks = graph.tasks;
  const n = tasks.length;

  const depStart = new Int32Array(n + 1);
  for (let i = 0; i < n; i++) depStart[i + 1] = depStart[i]! + tasks[i]!.dependencies.length;
  const deps = new Int32Array(depStart[n]!);
  const dependentCount = new Int32Array(n + 1);
  for (let i = 0, k = 0; i < n; i++) {
    for (const id of tasks[i]!.dependencies) {
      const d = index.get(id) ?? -1;
      deps[k++] = d;
      if (d >= 0) dependentCount[d + 1]!++;
    }
  }
  const dependentStart = new Int32Array(n + 1);
  for (let i = 0; i < n; i++) dependentStart[i + 1] = dependentStart[i]! + dependentCount[i + 1]!;
  const dependents = new Int32Array(deps.length);
  const fill = dependentStart.slice(0, n);
  for (let i = 0; i < n; i++) {
    for (let k = depStart[i]!; k < depStart[i + 1]!; k++)
      if (deps[k]! >= 0) dependents[fill[deps[k]!]!++] = i;
  }

  const workstreamIndex = new Map(graph.workstreams.map((w, i) => [w.id, i]));
  const workstreamOf = new Int32Array(n);
  for (let i = 0; i < n; i++) workstreamOf[i] = workstreamIndex.get(tasks[i]!.workstreamId) ?? -1;
  return { index, depStart, deps, dependentStart, dependents, workstreamOf };
}

/**
 * Positions of the tasks sorted by id (code-point order; ids are ASCII). Only planning needs it, so it
 * is sorted on the first plan rather than on every load.
 */
export function positionsById(graph: Graph, topo: Topology = topology(graph)): Int32Array {
  let byId = sortedById.get(graph);
  if (!byId) {
    const sorted = graph.tasks.map((t) => t.id).sort();
    byId = Int32Array.from(sorted, (id) => topo.index.get(id)!);
    sortedById.set(graph, byId);
  }
  return byId;
}

/** How many of task i's dependencies name a task (an unknown one, reported by validation, is no edge). */
function knownDependencies(topo: Topology, i: number): number {
  let known = 0;
  for (let k = topo.depStart[i]!; k < topo.depStart[i + 1]!; k++) if (topo.deps[k]! >= 0) known++;
  return known;
}

/**
 * Each task's longest chain of dependencies (0 without any), or null when the dependencies have a
 * cycle. Validation finds cycles with it and planning makes its waves of it, so it is computed once.
 */
export function dependencyLevels(graph: Graph, topo: Topology = topology(graph)): Int32Array | null {
  if (levelsOf.has(graph)) return levelsOf.get(graph)!;
  const n = graph.tasks.length;
  const level = new Int32Array(n);
  const remaining = new Int32Array(n);
  const ready: number[] = [];
  for (let i = 0; i < n; i++) {
    remaining[i] = knownDependencies(topo, i);
    if (remaining[i] === 0) ready.push(i);
  }
  let seen = 0;
  while (ready.length > 0) {
    const i = ready.pop()!;
    seen++;
    for (let k = topo.dependentStart[i]!; k < topo.dependentStart[i + 1]!; k++) {
      const child = topo.dependents[k]!;
      if (level[child]! <= level[i]!) level[child] = level[i]! + 1;
      if (--remaining[child]! === 0) ready.push(child);
    }
  }
  const levels = seen === n ? level : null;
  levelsOf.set(graph, levels);
  return levels;
}

/**
 * Kahn's algorithm over positions, taking the ready task with the smallest id first (code-point
 * order; ids are ASCII). Returns positions in order; fewer than the task count means a cycle.
 */
export function kahnOrder(graph: Graph, topo: Topology = topology(graph)): Int32Array {
  const n = graph.tasks.length;
  // The ready heap holds ranks by id, so that it compares integers, not strings.
  const taskAt = positionsById(graph, topo);
  const rankOf = new Int32Array(n);
  taskAt.forEach((i, r) => (rankOf[i] = r));

  const remaining = new Int32Array(n);
  const heap = new MinHeap(n);
  for (let i = 0; i < n; i++) {
    remaining[i] = knownDependencies(topo, i);
    if (remaining[i] === 0) heap.push(rankOf[i]!);
  }
  const order = new Int32Array(n);
  let placed = 0;
  while (heap.size > 0) {
    const task = taskAt[heap.pop()]!;
    order[placed++] = task;
    for (let k = topo.dependentStart[task]!; k < topo.dependentStart[task + 1]!; k++) {
      const child = topo.dependents[k]!;
      if (--remaining[child]! === 0) heap.push(rankOf[child]!);
    }
  }
  return placed === n ? order : order.subarray(0, placed);
}

/** A binary min-heap of non-negative integers with a fixed capacity. */
class MinHeap {
  private readonly items: Int32Array;
  size = 0;

  constructor(capacity: number) {
    this.items = new Int32Array(Math.max(1, capacity));
  }

  push(value: number): void {
    const a = this.items;
    let i = this.size++;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (a[parent]! <= value) break;
      a[i] = a[parent]!;
      i = parent;
    }
    a[i] = value;
  }

  pop(): number {
    const a = this.items;
    const top = a[0]!;
    const last = a[--this.size]!;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= this.size) break;
      const m = l + 1 < this.size && a[l + 1]! < a[l]! ? l + 1 : l;
      if (a[m]! >= last) break;
      a[i] = a[m]!;
      i = m;
    }
    a[i] = last;
    return top;
  }
}
keepHiddenClass(new MinHeap(1));
