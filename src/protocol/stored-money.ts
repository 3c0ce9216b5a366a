/**
 * Runs stored before amounts were counted in micro-dollars hold them as floats of dollars: `costUsd`,
 * `capUsd` and `reservedUsd` on attempts and resolutions, `budgetRaisedUsd` on a task, `spentUsd`,
 * `reservedUsd` and `raisedUsd` in the budget record. They are read as the nearest micro-dollar (that
 * version rounded every amount it added to a millionth, so this changes none of its sums) under the
 * names the engine now writes, and the next write stores them so. A value that is no amount of dollars
 * is damage, named in one line.
 */
import { microsOfDollars } from "../graph/amount.ts";
import { StateDamageError } from "./state-check.ts";

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

/** Renames a record's dollar fields to micro-dollars, in place; `where` names it for a damage message. */
function inMicros(part: string, where: string, record: unknown): void {
  if (!isRecord(record)) return; // the schema says what is wrong with it
  for (const [old, name] of Object.entries(RENAMED)) {
    if (!Object.hasOwn(record, old)) continue;
    const value = record[old];
    const micros = value === null ? null : typeof value === "number" ? microsOfDollars(value) : undefined;
    if (micros === undefined || (micros === null && value !== null))
      throw new StateDamageError(
        part,
        `has a wrong value at ${where}.${old}: ${JSON.stringify(value) ?? String(value)} is not an amount of US dollars`,
      );
    delete record[old];
    if (!Object.hasOwn(record, name)) record[name] = micros;
  }
}

/** The budget record of a run's index, in micro-dollars. */
export function indexInMicros(part: string, index: Record<string, unknown>): void {
  const budget = index.budget;
  if (!isRecord(budget)) return;
  inMicros(part, "budget.run", budget.run);
  if (isRecord(budget.workstreams))
    for (const [id, spend] of Object.entries(budget.workstreams))
      inMicros(part, `budget.workstreams.${id}`, spend);
}

/** A task's record (its attempts, its resolutions, its raise), in micro-dollars. */
export function taskInMicros(part: string, id: string, record: unknown): void {
  if (!isRecord(record)) return;
  inMicros(part, `tasks.${id}`, record);
  if (Array.isArray(record.attempts))
    record.attempts.forEach((a, i) => inMicros(part, `tasks.${id}.attempts.${i}`, a));
  const conflict = record.conflict;
  if (isRecord(conflict) && Array.isArray(conflict.resolutions))
    conflict.resolutions.forEach((r, i) => inMicros(part, `tasks.${id}.conflict.resolutions.${i}`, r));
}

/** A workstream's record (its integration PR's resolutions), in micro-dollars. */
export function workstreamInMicros(part: string, id: string, record: unknown): void {
  if (!isRecord(record) || !isRecord(record.conflict)) return;
  const resolutions = record.conflict.resolutions;
  if (Array.isArray(resolutions))
    resolutions.forEach((r, i) => inMicros(part, `workstreams.${id}.conflict.resolutions.${i}`, r));
}
