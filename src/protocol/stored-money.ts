/**
 * Runs stored before amounts were counted in micro-dollars hold them as floats of dollars: `costUsd`,
 * `capUsd` and `reservedUsd` on attempts and resolutions, `budgetRaisedUsd` on a task, `spentUsd`,
 * `reservedUsd` and `raisedUsd` in the budget record. They are read as the nearest micro-dollar (that
 * version rounded every amount it added to a millionth, so this changes none of its sums) under the
 * names the engine now writes, and the next write stores them so. A value that is no amount of dollars
 * is damage: each function answers the first such problem, in words, for state-check.ts to name.
 */
import { microsOfDollars } from "../graph/amount.ts";

const RENAMED: Record<string, string> = {
  costUsd: "costMicros",
  capUsd: "capMicros",
  reservedUsd: "reservedMicros",
  spentUsd: "spentMicros",
  raisedUsd: "raisedMicros",
  budgetRaisedUsd: "budgetRaisedMicros",
};

const isRecord = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === "object" && !Array.isArray(value);

/** What is wrong, in words, or null. */
type Problem = string | null;

/** Renames a record's dollar fields to micro-dollars, in place; `where` names it in a problem. */
function inMicros(where: string, record: unknown): Problem {
  if (!isRecord(record)) return null; // the schema says what is wrong with it
  for (const [old, name] of Object.entries(RENAMED)) {
    if (!Object.hasOwn(record, old)) continue;
    const value = record[old];
    const micros = value === null ? null : typeof value === "number" ? microsOfDollars(value) : undefined;
    if (micros === undefined || (micros === null && value !== null))
      return `has a wrong value at ${where}.${old}: ${JSON.stringify(value) ?? String(value)} is not an amount of US dollars`;
    delete record[old];
    if (!Object.hasOwn(record, name)) record[name] = micros;
  }
  return null;
}

/** The first problem of a list of records, each converted in turn. */
const each = (records: unknown, where: (i: number) => string): Problem =>
  Array.isArray(records)
    ? records.reduce<Problem>((found, r, i) => found ?? inMicros(where(i), r), null)
    : null;

/** A run's index (its budget record, its workstreams' resolutions), in micro-dollars. */
export function indexInMicros(index: Record<string, unknown>): Problem {
  const budget = index.budget;
  let problem: Problem = null;
  if (isRecord(budget)) {
    problem = inMicros("budget.run", budget.run);
    if (isRecord(budget.workstreams))
      for (const [id, spend] of Object.entries(budget.workstreams))
        problem ??= inMicros(`budget.workstreams.${id}`, spend);
  }
  if (isRecord(index.workstreams))
    for (const [id, ws] of Object.entries(index.workstreams))
      if (isRecord(ws) && isRecord(ws.conflict))
        problem ??= each(ws.conflict.resolutions, (i) => `workstreams.${id}.conflict.resolutions.${i}`);
  return problem;
}

/** A task's record (its attempts, its resolutions, its raise), in micro-dollars. */
export function taskInMicros(id: string, record: unknown): Problem {
  if (!isRecord(record)) return null;
  const conflict = record.conflict;
  return (
    inMicros(`tasks.${id}`, record) ??
    each(record.attempts, (i) => `tasks.${id}.attempts.${i}`) ??
    (isRecord(conflict) ? each(conflict.resolutions, (i) => `tasks.${id}.conflict.resolutions.${i}`) : null)
  );
}
