/**
 * How a run's state is laid out in git, so that an event reads and writes what it changes, not the
 * whole run: a small index (everything but the per-task records) and the per-task records in
 * buckets of about 32 tasks (a task's bucket is a hash of its id), all in one commit, written by one
 * compare-and-swap. A 10,000-task run rewrites the index and a bucket or two per event, as a 300-task
 * run does. Both hosts use it: the GitHub app on the state branch, local mode on its git ref.
 *
 *     run-<n>/run.json           the index (with the layout: format version and bucket count)
 *     run-<n>/tasks/007.json     the records of the tasks in bucket 7, each per-task map by name
 *
 * Runs stored before (one `run-<n>.json` document) still load, and are rewritten in this layout by
 * their next write.
 */
import { checkIndex, checkTaskMap, parsePart, StateDamageError } from "./state-check.ts";
import { settleSpend } from "../engine/budget.ts";
import type { RunState } from "../engine/types.ts";
import { MAX_TASKS } from "../graph/schema.ts";

export const TASKS_PER_BUCKET = 32;

/** The per-task maps of a local run: the engine's records and the fingerprints resume compares. */
export const LOCAL_PER_TASK: PerTaskMaps = [["tasks"], ["taskFingerprints"]];
/** A run the GitHub app hosts has those and its check runs' ids. */
export const HOSTED_PER_TASK: PerTaskMaps = [...LOCAL_PER_TASK, ["github", "checkRuns"]];
const LAYOUT_KEY = "$layout";

/** Paths of the objects in a run state that are keyed by task id (`tasks`, and hosts' own). */
export type PerTaskMaps = readonly (readonly string[])[];

export interface Parts {
  index: string;
  /** Bucket number to its text. */
  buckets: Map<number, string>;
  /** The task ids in each bucket (fixed while the run's tasks are). */
  members: string[][];
}

/** Buckets for a run of `tasks` tasks (fixed when the run is created). */
export const bucketCount = (tasks: number): number => Math.max(1, Math.ceil(tasks / TASKS_PER_BUCKET));

/**
 * The bucket count to write a run with, given the count it has (0: none yet) and its tasks now: kept
 * while the run has not outgrown it (a graph changed on resume may add tasks), else recounted, which
 * rewrites every bucket once.
 */
export const keptBuckets = (current: number, tasks: number): number =>
  current > 0 && bucketCount(tasks) <= 2 * current ? current : bucketCount(tasks);

/** FNV-1a: a task's bucket, stable for its id. */
export function bucketOf(id: string, count: number): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < id.length; i++) hash = Math.imul(hash ^ id.charCodeAt(i), 0x01000193);
  return (hash >>> 0) % count;
}

export const bucketPath = (bucket: number): string => `tasks/${String(bucket).padStart(3, "0")}.json`;

/** The part that holds a task's record: its bucket, or (the earlier format) the run's one document. */
export const taskPart = (id: string, buckets: number): string =>
  buckets > 0 ? bucketPath(bucketOf(id, buckets)) : "the run's document";

/**
 * A run's task records against the tasks of the graph it follows: a bucket emptied or cut (`{}`) would
 * otherwise read as a run of fewer tasks, and a record of a task the graph lacks would be run over.
 * Only for a state of that very graph (a resume with a changed graph adds and drops tasks itself).
 */
export function checkTaskRecords(
  state: { tasks: Record<string, unknown> },
  tasks: Iterable<string>,
  buckets: number,
): void {
  const planned = new Set(tasks);
  for (const id of planned)
    if (!Object.hasOwn(state.tasks, id))
      throw new StateDamageError(
        taskPart(id, buckets),
        `has no record of task '${id}', which the run's graph has`,
      );
  for (const id of Object.keys(state.tasks))
    if (!planned.has(id))
      throw new StateDamageError(
        taskPart(id, buckets),
        `holds a record of task '${id}', which the run's graph does not have`,
      );
}

const at = (root: unknown, path: readonly string[]): Record<string, unknown> | undefined => {
  let node = root as Record<string, unknown> | undefined;
  for (const key of path) node = node?.[key] as Record<string, unknown> | undefined;
  return node;
};

/** The index: the state with its per-task maps emptied, and the layout it was written in. */
export function indexText(state: RunState, perTask: PerTaskMaps, buckets: number): string {
  return `${JSON.stringify(state, (_key, value: unknown) => {
    // Each per-task map is written as {} here; its entries live in the buckets.
    if (value !== null && typeof value === "object" && perTask.some((p) => at(state, p) === value)) return {};
    return value;
  }).replace(/^\{/, `{"${LAYOUT_KEY}":{"version":2,"buckets":${buckets}},`)}\n`;
}

/** The text of one bucket: each per-task map's entries for the bucket's tasks, in a stable order. */
export function bucketText(state: RunState, perTask: PerTaskMaps, ids: readonly string[]): string {
  const maps: Record<string, Record<string, unknown>> = {};
  for (const path of perTask) {
    const map = at(state, path) ?? {};
    const entries: Record<string, unknown> = {};
    for (const id of ids) if (map[id] !== undefined) entries[id] = map[id];
    maps[path.join(".")] = entries;
  }
  return `${JSON.stringify(maps)}\n`;
}

/** Task ids by bucket, in the state's order. */
export function tasksByBucket(state: RunState, buckets: number): string[][] {
  const byBucket: string[][] = Array.from({ length: buckets }, () => []);
  for (const id of Object.keys(state.tasks)) byBucket[bucketOf(id, buckets)]!.push(id);
  return byBucket;
}

/** Every part of a state: its index and all its buckets. */
export function splitState(state: RunState, perTask: PerTaskMaps, buckets: number): Parts {
  const members = tasksByBucket(state, buckets);
  return {
    index: indexText(state, perTask, buckets),
    buckets: new Map(members.map((ids, b) => [b, bucketText(state, perTask, ids)])),
    members,
  };
}

/** What a store knows of a run's parts at the version it read. */
export interface KnownParts {
  /** 0 for a run still in the earlier one-document format. */
  buckets: number;
  bucketTexts: string[];
  members: string[][] | null;
}

/** The parts a write of a state carries, and the texts of every bucket after it. */
export interface NextParts {
  buckets: number;
  bucketTexts: string[];
  /** Task ids by bucket, where worked out. */
  members: string[][] | null;
  /** Buckets whose text changed (every bucket for a full write). */
  changed: number[];
  index: string;
  /** Written from what was read: the index and the changed buckets only. */
  partial: boolean;
}

/**
 * What a store remembers of a run, if it is of the version a write expects: a write from it carries
 * only what changed. Anything else (a new run, a version this store did not read) is written whole.
 */
export const knownAt = <K extends { version: string }>(
  known: K | undefined,
  expected: string | null,
): K | undefined => (expected !== null && known?.version === expected ? known : undefined);

/** How a stored state's commit is described: the run, the state's number, and its outcome once over. */
export const stateCommitMessage = (run: string, state: RunState): string =>
  `${run}: state ${state.seq}${state.outcome ? ` (${state.outcome})` : ""}`;

/**
 * What writing `next` over the parts read (`from`) changes. With the tasks a round touched, only their
 * buckets are rewritten (a round of events adds no task); without them (a new run, a resume, a run in
 * the earlier format or not read by this store), all of it. `indexOf` is the state the index is made
 * of, where a host leaves something out of it (the GitHub app, the pinned graph text).
 */
export function nextParts(
  from: KnownParts | undefined,
  next: RunState,
  perTask: PerTaskMaps,
  touched: ReadonlySet<string> | undefined,
  indexOf: RunState = next,
): NextParts {
  if (from && from.buckets > 0 && touched) {
    const { buckets } = from;
    const bucketTexts = [...from.bucketTexts];
    let members = from.members;
    const changed: number[] = [];
    for (const b of new Set([...touched].map((id) => bucketOf(id, buckets)))) {
      members ??= tasksByBucket(next, buckets);
      const text = bucketText(next, perTask, members[b]!);
      if (text === bucketTexts[b]) continue;
      bucketTexts[b] = text;
      changed.push(b);
    }
    const index = indexText(indexOf, perTask, buckets);
    return { buckets, bucketTexts, members, changed, index, partial: true };
  }
  const buckets = keptBuckets(from?.buckets ?? 0, Object.keys(next.tasks).length);
  // The index's state leaves out host data, never task records: its buckets are those of `next`.
  const parts = splitState(indexOf, perTask, buckets);
  const bucketTexts = parts.members.map((_, b) => parts.buckets.get(b)!);
  return {
    buckets,
    bucketTexts,
    members: parts.members,
    changed: bucketTexts.map((_, b) => b),
    index: parts.index,
    partial: false,
  };
}

/** The most buckets a run has: those of the largest graph (a count is kept while a run is not outgrown). */
export const MAX_BUCKETS = bucketCount(MAX_TASKS);

/** The layout an index was written in (null for a whole-state document of the earlier format). */
export function layoutOf(text: string): { version: 2; buckets: number } | null {
  const head = text.slice(0, 80);
  const m = /^\{"\$layout":\{"version":2,"buckets":(\d{1,15})\}/.exec(head);
  return m ? { version: 2, buckets: Number(m[1]) } : null;
}

/** The layout of a run.json, which must have one with at least one bucket. */
export function indexLayout(text: string): { version: 2; buckets: number } {
  const layout = layoutOf(text);
  if (!layout) throw new StateDamageError("run.json", "does not start with its layout ($layout, version 2)");
  if (layout.buckets < 1) throw new StateDamageError("run.json", "says the run has no task buckets");
  // Said before any bucket is read: a damaged count (5,000,000) would have each host read, and hold,
  // millions of buckets for minutes.
  if (layout.buckets > MAX_BUCKETS)
    throw new StateDamageError(
      "run.json",
      `says the run has ${layout.buckets} task buckets, more than a graph of ${MAX_TASKS} tasks has (${MAX_BUCKETS})`,
    );
  return layout;
}

/**
 * A state from its index and bucket texts, each checked as it is read (state-check.ts): a damaged or
 * missing part is a StateDamageError naming it, never a state read half.
 */
export function joinState<S extends RunState>(
  index: string,
  buckets: Iterable<string | null>,
  perTask: PerTaskMaps,
): S {
  const state = parsePart("run.json", index) as S & { [LAYOUT_KEY]?: unknown };
  delete state[LAYOUT_KEY];
  checkIndex("run.json", state as unknown as Record<string, unknown>);
  let bucket = 0;
  for (const text of buckets) {
    const part = bucketPath(bucket++);
    const maps = parsePart(part, text);
    for (const path of perTask) {
      const name = path.join(".");
      const into = at(state, path);
      const map = checkTaskMap(part, name, maps[name]);
      if (into) Object.assign(into, map);
    }
  }
  return state;
}

/** A run's stored parts, as read: either layout. */
export interface StoredParts {
  /** Bucket count, or 0 for the earlier format's one document (then `index` is that document). */
  buckets: number;
  index: string;
  /** null: the bucket is not there (damage, never an empty bucket). */
  bucketTexts: (string | null)[];
  /** The pinned graph text, where the host stores one (the GitHub app does). */
  graphText: string | null;
  /** Names the pinned graph's content (its blob id), where known. */
  graphKey: string | null;
}

/** The state the parts make, with the pinned graph text put back into its source where there is one. */
export function stateOfParts<S extends RunState>(parts: StoredParts, perTask: PerTaskMaps): S {
  if (parts.buckets === 0) {
    // The earlier format's one document.
    const state = parsePart("the run's document", parts.index);
    checkIndex("the run's document", state);
    checkTaskMap("the run's document", "tasks", state.tasks);
    settleSpend(state as unknown as RunState);
    return state as unknown as S;
  }
  const state = joinState<S>(parts.index, parts.bucketTexts, perTask);
  const source = (state as { source?: { text?: string } }).source;
  if (source && parts.graphText !== null) source.text = parts.graphText;
  settleSpend(state);
  return state;
}

/**
 * The GraphQL selection of a run's files in a commit (GitHub's API), with `$dir` = `run-<n>` and
 * `$legacy` = `run-<n>.json`: the app reads it at the branch head, the task Action at the commit it
 * was dispatched at. Both complete it with wholeRunFiles, then read it with partsOfRunFiles.
 * GitHub cuts `Blob.text` at 512,000 bytes and says so in `isTruncated`
 * (https://docs.github.com/en/graphql/reference/objects#blob): every blob is asked with its flag and id.
 */
export const RUN_FILES = `dir: file(path: $dir) { object { ... on Tree { entries { name oid object {
  ... on Blob { text isTruncated } ... on Tree { entries { name oid object { ... on Blob { text isTruncated } } } } } } } } }
  legacy: file(path: $legacy) { oid object { ... on Blob { text isTruncated } } }`;

interface FileEntry {
  name: string;
  oid?: string;
  object: { text?: string | null; isTruncated?: boolean; entries?: FileEntry[] } | null;
}

export interface RunFiles {
  dir?: { object: { entries?: FileEntry[] } | null } | null;
  legacy?: { oid?: string; object: { text?: string | null; isTruncated?: boolean } | null } | null;
}

/**
 * The run's files with every blob GitHub cut read whole by its id (`readBlob`: the git blobs API,
 * up to 100 MB); a blob that cannot be read whole is damage that names it, never a cut text.
 */
export async function wholeRunFiles(
  files: RunFiles,
  readBlob: (oid: string) => Promise<string>,
): Promise<RunFiles> {
  const whole = async (
    path: string,
    oid: string | undefined,
    object: { text?: string | null; isTruncated?: boolean },
  ) => {
    if (!object.isTruncated) return;
    if (!oid)
      throw new StateDamageError(path, "was cut by GitHub's GraphQL API and has no id to read it whole by");
    try {
      object.text = await readBlob(oid);
      object.isTruncated = false;
    } catch (error) {
      throw new StateDamageError(
        path,
        `was cut by GitHub's GraphQL API and could not be read whole: ${(error as Error).message}`,
      );
    }
  };
  const walk = async (entries: FileEntry[] | undefined, prefix: string): Promise<void> => {
    for (const entry of entries ?? []) {
      if (!entry.object) continue;
      await whole(`${prefix}${entry.name}`, entry.oid, entry.object);
      await walk(entry.object.entries, `${prefix}${entry.name}/`);
    }
  };
  await walk(files.dir?.object?.entries, "");
  if (files.legacy?.object) await whole("the run's document", files.legacy.oid, files.legacy.object);
  return files;
}

export function partsOfRunFiles(files: RunFiles): StoredParts | null {
  const entries = files.dir?.object?.entries;
  const index = entries?.find((f) => f.name === "run.json")?.object?.text;
  if (entries && index == null) throw new StateDamageError("run.json", "is missing from the run's directory");
  const layout = index ? indexLayout(index) : null;
  if (entries && index && layout) {
    const graph = entries.find((f) => f.name === "graph.yaml");
    const buckets = new Map(
      (entries.find((f) => f.name === "tasks")?.object?.entries ?? []).map((e) => [
        `tasks/${e.name}`,
        e.object?.text,
      ]),
    );
    return {
      buckets: layout.buckets,
      index,
      bucketTexts: Array.from({ length: layout.buckets }, (_, b) => buckets.get(bucketPath(b)) ?? null),
      graphText: graph?.object?.text ?? null,
      graphKey: graph?.oid ?? null,
    };
  }
  const document = files.legacy?.object?.text;
  return document == null
    ? null
    : { buckets: 0, index: document, bucketTexts: [], graphText: null, graphKey: null };
}
