/**
 * The two "who is above whom" questions validation asks, answered in time and memory that grow with the
 * graph, not with its square: graph files are untrusted, and one crafted file must not stall or exhaust
 * the app that every installation shares. (Walking each workstream's whole parent chain, and keeping each
 * task's set of ancestors, took 28 s for a 0.4 MB chain of 4,000 workstreams, and 240 MB for a 0.24 MB
 * chain of 3,000 tasks with inputs_from.)
 */
import type { Topology } from "./topology.ts";

export interface Hierarchy {
  /** Number of ancestors of each workstream; -1 for one on, or below, a cycle of parents. */
  depth: Int32Array;
  /** The first workstream (in file order) that is its own ancestor, with the cycle from it; or null. */
  cycle: { at: number; ids: string[] } | null;
}

/** Depths of workstreams given each one's parent position (-1 for none): each parent link is followed once. */
export function hierarchy(ids: readonly string[], parentOf: readonly number[]): Hierarchy {
  const UNKNOWN = -2;
  const VISITING = -3;
  const CYCLIC = -1;
  const depth = new Int32Array(ids.length).fill(UNKNOWN);
  const onCycle = new Uint8Array(ids.length);
  const path: number[] = [];
  for (let start = 0; start < ids.length; start++) {
    path.length = 0;
    let at = start;
    while (at !== -1 && depth[at] === UNKNOWN) {
      depth[at] = VISITING;
      path.push(at);
      at = parentOf[at]!;
    }
    // The path stopped at a root's parent (-1), at a workstream already known, or on itself.
    if (at !== -1 && depth[at]! < 0) {
      // A new cycle (from `at` on), or a path into a known one.
      if (depth[at] === VISITING) for (let k = path.indexOf(at); k < path.length; k++) onCycle[path[k]!] = 1;
      for (const w of path) depth[w] = CYCLIC;
    } else {
      let d = at === -1 ? 0 : depth[at]! + 1;
      for (let k = path.length - 1; k >= 0; k--) depth[path[k]!] = d++;
    }
  }
  const first = onCycle.indexOf(1);
  if (first === -1) return { depth, cycle: null };
  const cycle = [ids[first]!];
  for (let at = parentOf[first]!; at !== first; at = parentOf[at]!) cycle.push(ids[at]!);
  cycle.push(ids[first]!);
  return { depth, cycle: { at: first, ids: cycle } };
}

/**
 * For each question [task, other] (positions), whether `other` is a direct or transitive dependency of
 * `task`. One search per distinct `other`, down through its dependents and no deeper (in dependency
 * levels) than the deepest task asking about it; marks are stamped per search, so memory stays linear.
 * The graph must be acyclic; `level` is each task's longest chain of dependencies.
 */
export function dependencyAnswers(
  topo: Topology,
  level: Int32Array,
  questions: readonly (readonly [task: number, other: number])[],
): boolean[] {
  const n = level.length;
  const byOther = new Map<number, number[]>();
  questions.forEach(([, other], q) => {
    const asking = byOther.get(other);
    if (asking) asking.push(q);
    else byOther.set(other, [q]);
  });
  const answers = new Array<boolean>(questions.length).fill(false);
  const reachedIn = new Int32Array(n).fill(-1);
  const stack = new Int32Array(n);
  let search = 0;
  for (const [other, asking] of byOther) {
    let deepest = 0;
    for (const q of asking) deepest = Math.max(deepest, level[questions[q]![0]]!);
    let top = 0;
    stack[top++] = other;
    while (top > 0) {
      const at = stack[--top]!;
      for (let k = topo.dependentStart[at]!; k < topo.dependentStart[at + 1]!; k++) {
        const next = topo.dependents[k]!;
        if (reachedIn[next] === search || level[next]! > deepest) continue;
        reachedIn[next] = search;
        stack[top++] = next;
      }
    }
    for (const q of asking) answers[q] = reachedIn[questions[q]![0]] === search;
    search++;
  }
  return answers;
}
