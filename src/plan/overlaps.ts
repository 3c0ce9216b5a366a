/**
 * Overlaps seen before they start: tasks of different workstreams that may run at the same time and
 * name the same paths (their `tagged_paths`, or where the graph gives none, the paths their
 * descriptions name). Such tasks are where parallel work breaks together, with or without a textual
 * conflict. They are listed at plan time (the plan comment, `agentrelay plan`), and by default only
 * listed: with `overlaps: serialize`, the later task of a pair (in canonical order) waits until the
 * earlier task's workstream has landed (merged, or failed), as a task waits for a workstream it
 * depends on, unless that would make the two workstreams wait for each other.
 *
 * Two tasks may run at the same time unless one must be finished before the other starts: it is
 * among its dependencies (transitively), or in a workstream it waits to be merged (a dependency in
 * another workstream) or to have its integration PR (an ancestor workstream).
 */
import type { Task } from "../graph/model.ts";
import type { Plan } from "./model.ts";

export interface Overlap {
  /** The two tasks, the earlier (in canonical order) first. */
  tasks: [string, string];
  workstreams: [string, string];
  /** The paths both name (the more specific of two that nest). */
  paths: string[];
  /** Where each task's paths come from. */
  from: ["tagged" | "described", "tagged" | "described"];
  /** With `overlaps: serialize`: whether the later task waits for the earlier one's workstream. */
  serialized: boolean;
}

/** At most this many overlaps are worked out and listed (a graph's first ones, in canonical order). */
export const MAX_OVERLAPS = 200;

/**
 * Bounds on the work, since graph files are untrusted and every PR with one is planned: the tasks
 * compared per top-level path, the pairs compared, and the steps spent finding whether one task waits
 * for another. Past them the first overlaps found are the answer.
 */
const MAX_PER_PATH = 200;
const MAX_PAIRS = 5_000;
const MAX_STEPS = 100_000;

/** A token that reads as a path: a directory part, or a file name with an extension. */
const PATHLIKE = /^(?:\.?[\w-][\w.-]*\/)*(?:\.?[\w-][\w.-]*)?$/;
const EXTENSION = /[\w-]{2,}\.[A-Za-z][A-Za-z0-9]{0,7}$/;

/** What separates the words of a description. */
const SEPARATOR = /[\s`'"()[\]{},;<>]/;
/** A character every path has: a directory part's slash or an extension's dot. */
const PATH_MARK = /[./]/g;

/**
 * The words of `text` that hold a '/' or a '.', in order: only those can be paths, and most words
 * of a description are neither (splitting every description into all its words was a tenth of
 * `agentrelay plan` at 10,000 tasks). Each character is looked at a bounded number of times.
 */
function* markedWords(text: string): Generator<string> {
  PATH_MARK.lastIndex = 0;
  for (let mark = PATH_MARK.exec(text); mark; mark = PATH_MARK.exec(text)) {
    let start = mark.index;
    while (start > 0 && !SEPARATOR.test(text[start - 1]!)) start--;
    let end = mark.index + 1;
    while (end < text.length && !SEPARATOR.test(text[end]!)) end++;
    yield text.slice(start, end);
    PATH_MARK.lastIndex = end;
  }
}

/** The paths a description names (`src/calc.py`, `docs/`, `config.json`), in order, once each. */
export function pathsInDescription(text: string | null): string[] {
  if (!text) return [];
  const found = new Set<string>();
  for (const raw of markedWords(text)) {
    const token = raw.replace(/[.:!?]+$/, "").replace(/^\.\//, "");
    if (!token || token.includes("://") || !PATHLIKE.test(token)) continue;
    if (!token.includes("/") && !EXTENSION.test(token)) continue;
    if (/^\d+(\.\d+)+$/.test(token)) continue; // a version, not a path
    found.add(token.replace(/\/+$/, ""));
  }
  return [...found];
}

/** A task's paths and where they come from. */
function pathsOf(task: Task): { paths: string[]; from: "tagged" | "described" } {
  if (task.taggedPaths.length > 0)
    return {
      paths: [...new Set(task.taggedPaths.map((p) => p.path.replace(/^\.\//, "").replace(/\/+$/, "")))],
      from: "tagged",
    };
  return { paths: pathsInDescription(task.description), from: "described" };
}

/** The path both name, when `a` and `b` are the same or one is a directory holding the other. */
function common(a: string, b: string): string | null {
  if (a === b || b.startsWith(`${a}/`)) return b;
  if (a.startsWith(`${b}/`)) return a;
  return null;
}

/**
 * What a task waits for before it starts, as a graph of tasks and workstreams (a workstream "node"
 * stands for all of its tasks being finished): its dependencies, the workstreams of dependencies in
 * other workstreams, its workstream's ancestors, and what serialisation added.
 */
class Waits {
  private readonly extra = new Map<string, string[]>();
  /** Steps left to spend on `reaches`. */
  steps = MAX_STEPS;
  constructor(private readonly plan: Plan) {}

  /** What a node waits for directly (kept: the same nodes are expanded by many searches). */
  private readonly edges = new Map<string, string[]>();

  private next(node: string): string[] {
    const known = this.edges.get(node);
    if (known)
      return this.extra.has(node) ? [...known, ...this.extra.get(node)!.map((w) => `ws:${w}`)] : known;
    let edges: string[];
    if (node.startsWith("ws:")) edges = this.plan.tasksByWorkstream.get(node.slice(3)) ?? [];
    else {
      const task = this.plan.tasks.get(node)!;
      edges = [
        ...task.dependencies,
        ...this.plan.upstreamWorkstreams.get(node)!.map((w) => `ws:${w}`),
        ...this.ancestors(task.workstreamId).map((w) => `ws:${w}`),
      ];
    }
    this.edges.set(node, edges);
    return this.next(node);
  }

  /** A workstream's ancestors (plan.ts's ancestorsOf, which plan.ts builds this module into). */
  private ancestors(ws: string): string[] {
    const found: string[] = [];
    for (
      let p = this.plan.workstreams.get(ws)!.parentId;
      p !== null;
      p = this.plan.workstreams.get(p)!.parentId
    )
      found.push(p);
    return found;
  }

  /** Whether `from` waits, directly or not, for `to` (both task ids, or `ws:` nodes). */
  reaches(from: string, to: string): boolean {
    const seen = new Set([from]);
    const queue = [from];
    while (queue.length > 0 && this.steps > 0) {
      const edges = this.next(queue.pop()!);
      this.steps -= edges.length + 1;
      for (const next of edges) {
        if (next === to) return true;
        if (!seen.has(next)) {
          seen.add(next);
          queue.push(next);
        }
      }
    }
    return false;
  }

  add(task: string, workstream: string): void {
    this.extra.set(task, [...(this.extra.get(task) ?? []), workstream]);
  }
}

/**
 * The overlaps of a plan, in canonical order of their earlier then later task; with `overlaps:
 * serialize`, which of them are serialised (see the module's comment).
 */
export function overlapsOf(plan: Plan): Overlap[] {
  const serialize = plan.graph.settings.overlaps === "serialize";
  // Tasks by path, so that only tasks sharing a path (or a directory of it) are compared.
  const named = plan.order
    .map((id) => ({ id, ...pathsOf(plan.tasks.get(id)!) }))
    .filter((t) => t.paths.length > 0);
  const byTop = new Map<string, typeof named>();
  for (const t of named)
    for (const top of new Set(t.paths.map((p) => p.split("/")[0]!))) {
      const list = byTop.get(top) ?? [];
      if (list.length < MAX_PER_PATH) list.push(t);
      byTop.set(top, list);
    }
  const candidates = new Map<string, { a: (typeof named)[number]; b: (typeof named)[number] }>();
  pairs: for (const list of byTop.values())
    for (let i = 0; i < list.length; i++)
      for (let j = i + 1; j < list.length; j++) {
        if (candidates.size >= MAX_PAIRS) break pairs;
        const [a, b] = [list[i]!, list[j]!];
        const [wsA, wsB] = [a.id, b.id].map((id) => plan.workstreams.get(plan.tasks.get(id)!.workstreamId)!);
        if (wsA === wsB) continue;
        // The same path in two repositories is two files: tasks of two repositories never overlap.
        if ((wsA!.repository ?? null) !== (wsB!.repository ?? null)) continue;
        candidates.set(`${a.id}\0${b.id}`, { a, b });
      }
  const waits = new Waits(plan);
  const overlaps: Overlap[] = [];
  const pairs = [...candidates.values()].sort(
    (x, y) =>
      plan.rank.get(x.a.id)! - plan.rank.get(y.a.id)! || plan.rank.get(x.b.id)! - plan.rank.get(y.b.id)!,
  );
  for (const { a, b } of pairs) {
    if (overlaps.length >= MAX_OVERLAPS || waits.steps <= 0) break;
    const paths = new Set<string>();
    for (const p of a.paths)
      for (const q of b.paths) {
        const both = common(p, q);
        if (both) paths.add(both);
      }
    if (paths.size === 0) continue;
    if (waits.reaches(b.id, a.id) || waits.reaches(a.id, b.id)) continue; // never at the same time
    const [wsA, wsB] = [a.id, b.id].map((id) => plan.tasks.get(id)!.workstreamId) as [string, string];
    // The later waits for the earlier's workstream, unless that workstream already waits for the later task.
    const serialized = serialize && !waits.reaches(`ws:${wsA}`, b.id);
    if (serialized) waits.add(b.id, wsA);
    overlaps.push({
      tasks: [a.id, b.id],
      workstreams: [wsA, wsB],
      paths: [...paths].sort(),
      from: [a.from, b.from],
      serialized,
    });
  }
  return overlaps;
}

/** With `overlaps: serialize`, what each task waits to land before it starts (Plan.serialAfter). */
export function serialWaits(plan: Plan): Plan["serialAfter"] {
  const waits: Plan["serialAfter"] = new Map();
  if (plan.graph.settings.overlaps !== "serialize") return waits;
  for (const o of overlapsOf(plan))
    if (o.serialized)
      waits.set(o.tasks[1], [
        ...(waits.get(o.tasks[1]) ?? []),
        { task: o.tasks[0], workstream: o.workstreams[0] },
      ]);
  return waits;
}

/**
 * The waves once `overlaps: serialize` holds: a task that waits for an earlier workstream to land goes
 * in a wave after every task of that workstream (and its dependents after it). The plan's waves
 * otherwise follow the dependencies alone.
 */
export function serialWaves(plan: Plan): string[][] {
  if (plan.serialAfter.size === 0) return plan.waves;
  const level = new Map<string, number>();
  plan.waves.forEach((wave, i) => wave.forEach((id) => level.set(id, i)));
  // The order is topological: one pass settles the dependencies; a wait may lift a workstream's
  // earlier tasks only through tasks already visited, so passes repeat until nothing moves.
  for (let changed = true, passes = 0; changed && passes <= plan.order.length; passes++) {
    changed = false;
    const wsTop = new Map<string, number>();
    for (const [id, l] of level) {
      const ws = plan.tasks.get(id)!.workstreamId;
      wsTop.set(ws, Math.max(wsTop.get(ws) ?? 0, l));
    }
    for (const id of plan.order) {
      let l = 0;
      for (const dep of plan.tasks.get(id)!.dependencies) l = Math.max(l, level.get(dep)! + 1);
      for (const wait of plan.serialAfter.get(id) ?? [])
        l = Math.max(l, (wsTop.get(wait.workstream) ?? 0) + 1);
      if (l !== level.get(id)) {
        level.set(id, l);
        changed = true;
      }
    }
  }
  const waves: string[][] = [];
  for (const id of [...plan.order].sort()) (waves[level.get(id)!] ??= []).push(id);
  return waves.filter((wave) => wave !== undefined);
}

/** The overlaps as lines for people: the pairs, their workstreams, the paths, and what is done about them. */
export function overlapLines(overlaps: Overlap[], limit = 20): string[] {
  const shown = overlaps.slice(0, limit).map((o) => {
    const described = o.from.includes("described") ? " (named in a description)" : "";
    const done = o.serialized ? `: \`${o.tasks[1]}\` waits for \`${o.workstreams[0]}\` to land` : "";
    return `\`${o.tasks[0]}\` (${o.workstreams[0]}) and \`${o.tasks[1]}\` (${o.workstreams[1]}) both change ${o.paths.map((p) => `\`${p}\``).join(", ")}${described}${done}`;
  });
  if (overlaps.length > limit) shown.push(`and ${overlaps.length - limit} more`);
  return shown;
}
