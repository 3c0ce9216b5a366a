/**
 * A run's stored state, checked as it is read (locally on a git ref, on GitHub on the state branch,
 * in the task Action): every part is within a size bound, JSON, an object, and of the shape the engine
 * writes (engine/types.ts). Damage is a StateDamageError naming the part and what is wrong with it, so
 * that a run is never read half, with wrong types, or as "not run yet"; the adapter adds where the
 * part lives and how to get back its last good version.
 */
import { z } from "zod";
import { MAX_MICROS, MAX_RAISED_MICROS } from "../graph/amount.ts";
import { indexInMicros, taskInMicros } from "./stored-money.ts";

/** The largest part a run writes is far below this (a 10,000-task run's index is under 1 MB). */
export const MAX_PART_BYTES = 32 * 1024 * 1024;

export class StateDamageError extends Error {
  override name = "StateDamageError";
  constructor(
    /** The part, as stored: `run.json`, `tasks/003.json`. */
    readonly part: string,
    readonly problem: string,
  ) {
    super(`${part} ${problem}`);
  }
}

const count = z.number().int().nonnegative();
const time = z.number().finite();
const pullRequest = z.looseObject({ number: count, url: z.string() }).nullable();
/** Micro-dollars (graph/amount.ts): whole, and within what the engine can add up exactly. */
const micros = (max = Number.MAX_SAFE_INTEGER) => z.int().min(0).max(max);
/** What one attempt may report spending, and a raise as commands bound it (a budget's raises together). */
const cost = micros(MAX_MICROS);
const raised = micros(MAX_RAISED_MICROS);

const attemptRecord = z.looseObject({
  n: count,
  dispatchedAt: time,
  deadline: time,
  startedAt: time.nullable(),
  job: z.string().nullish(),
  outcome: z.enum(["succeeded", "failed", "timed_out", "cancelled"]).nullable(),
  reason: z.string().nullable(),
  costMicros: cost.nullable(),
  turns: count.nullable(),
  pushedSha: z.string().nullable(),
  gates: z.array(z.looseObject({ n: count, passed: z.boolean() })),
  capMicros: micros(MAX_RAISED_MICROS).nullish(),
  reservedMicros: micros().optional(),
});

const resolutionRecord = z.looseObject({
  n: count,
  dispatchedAt: time,
  outcome: z.enum(["succeeded", "failed", "lost"]).nullable(),
  reason: z.string().nullable(),
  costMicros: cost.nullable(),
  turns: count.nullable(),
  capMicros: micros(MAX_RAISED_MICROS).nullish(),
  reservedMicros: micros().optional(),
});

const conflict = z
  .looseObject({ files: z.array(z.string()), resolutions: z.array(resolutionRecord) })
  .optional();

/** An integration branch's verifications and repairs (engine/verification.ts): jobs like resolutions. */
const verification = z
  .looseObject({
    runs: z.array(resolutionRecord),
    repairs: z.array(resolutionRecord),
    passed: z.looseObject({ base: z.string(), head: z.string() }).nullish(),
  })
  .optional();

export const taskRunSchema = z.looseObject({
  status: z.enum(["pending", "running", "pr_open", "merged", "completed", "failed", "blocked", "cancelled"]),
  attempt: count,
  attemptBase: count,
  attempts: z.array(attemptRecord),
  pr: pullRequest,
  noPr: z.boolean(),
  reason: z.string().nullable(),
  waitingOn: count,
  concerns: z.array(z.string()),
  opsConcerns: z.array(z.string()),
  summary: z.string().nullable(),
  outputs: z.array(z.looseObject({ path: z.string(), action: z.string(), category: z.string() })),
  mergedAt: time.nullable(),
  budgetRaisedMicros: raised.optional(),
  conflict,
});

const workstreamRunSchema = z.looseObject({
  status: z.enum(["pending", "active", "merge_ready", "pr_open", "merged", "failed"]),
  preparation: z.enum(["none", "requested", "done"]),
  integration: z.enum(["none", "opening", "open", "merged", "skipped", "closed"]),
  pr: pullRequest,
  reason: z.string().nullable(),
  failedItself: z.boolean(),
  unfinished: count,
  activeTask: z.string().nullable(),
  autoMergeSkipped: z.boolean(),
  conflict,
  verification,
  landedCommit: z.string().optional(),
  landedUnverified: z.string().optional(),
});

/** The run's own record (its index, without the per-task maps the buckets hold). */
export const runIndexSchema = z.looseObject({
  schemaVersion: z.literal(1),
  runKey: z.string().min(1),
  graph: z.string().min(1),
  runNumber: count,
  fingerprint: z.string(),
  startedAt: time,
  seq: count,
  settings: z.looseObject({
    maxConcurrency: count,
    maxTaskAttempts: count,
    attemptTimeoutMs: count,
    failFastOnWorkstreamError: z.boolean(),
  }),
  workstreams: z.record(z.string(), workstreamRunSchema),
  active: count,
  candidates: z.array(z.string()),
  cancelled: z.boolean(),
  outcome: z.enum(["succeeded", "completed_with_failures", "cancelled"]).nullable(),
  finishedAt: time.nullable(),
  timeline: z.array(z.looseObject({ at: time, type: z.string() })),
  budget: z
    .looseObject({
      run: z.looseObject({ spentMicros: micros(), reservedMicros: micros(), raisedMicros: raised }),
      workstreams: z.record(
        z.string(),
        z.looseObject({ spentMicros: micros(), reservedMicros: micros(), raisedMicros: raised }),
      ),
      clearedMicros: micros().optional(),
    })
    .optional(),
});

/** The first problem zod found, as words: `tasks.a.status: ...`. */
const firstIssue = (error: z.ZodError, prefix: string): string => {
  const issue = error.issues[0]!;
  const path = [prefix, ...issue.path.map(String)].filter(Boolean).join(".");
  return `has a wrong value at ${path || "its top"}: ${issue.message}`;
};

/** A part's JSON object, checked for size and form first; `null` and arrays are not objects. */
export function parsePart(part: string, text: string | null | undefined): Record<string, unknown> {
  if (text == null) throw new StateDamageError(part, "is missing");
  if (text.length > MAX_PART_BYTES)
    throw new StateDamageError(part, `is larger than ${MAX_PART_BYTES} bytes`);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new StateDamageError(part, "is not JSON");
  }
  if (value === null || typeof value !== "object" || Array.isArray(value))
    throw new StateDamageError(
      part,
      `is not a JSON object (it is ${value === null ? "null" : Array.isArray(value) ? "an array" : typeof value})`,
    );
  return value as Record<string, unknown>;
}

/** Checks a run's index against the schema the engine writes. */
export function checkIndex(part: string, index: Record<string, unknown>): void {
  // Amounts a run stored in dollars before micro-dollars are read in micro-dollars.
  const money = indexInMicros(index);
  if (money) throw new StateDamageError(part, money);
  const checked = runIndexSchema.safeParse(index);
  if (!checked.success) throw new StateDamageError(part, firstIssue(checked.error, ""));
}

/**
 * A per-task map of a bucket (`tasks`, `taskFingerprints`, ...), checked: an object whose keys are
 * task ids (never `__proto__`, which would silently drop the records it holds when merged) and, for
 * `tasks`, whose records are task runs.
 */
export function checkTaskMap(part: string, name: string, map: unknown): Record<string, unknown> {
  if (map === undefined) return {};
  if (map === null || typeof map !== "object" || Array.isArray(map))
    throw new StateDamageError(part, `has no object at ${name}`);
  if (Object.hasOwn(map, "__proto__")) throw new StateDamageError(part, `has a key __proto__ in ${name}`);
  if (name === "tasks")
    for (const [id, record] of Object.entries(map)) {
      const money = taskInMicros(id, record);
      if (money) throw new StateDamageError(part, money);
      const checked = taskRunSchema.safeParse(record);
      if (!checked.success) throw new StateDamageError(part, firstIssue(checked.error, `tasks.${id}`));
    }
  return map as Record<string, unknown>;
}

/**
 * A run's index holds the run whose place it is in (its folder or ref names `<graph>/<n>`): an index
 * copied from another run, or edited to name another, would act for that run's keys and jobs.
 */
export function checkRunKey(
  part: string,
  index: { runKey?: unknown; graph?: unknown; runNumber?: unknown },
  runKey: string,
): void {
  const slash = runKey.lastIndexOf("/");
  const [graph, n] = [runKey.slice(0, slash), Number(runKey.slice(slash + 1))];
  if (index.runKey !== runKey || index.graph !== graph || index.runNumber !== n)
    throw new StateDamageError(
      part,
      `names run '${String(index.runKey)}' (graph '${String(index.graph)}', number ${String(index.runNumber)}), not ${runKey}, whose place it holds`,
    );
}
