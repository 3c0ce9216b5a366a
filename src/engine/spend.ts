/**
 * Where a run's money went, every micro-dollar in exactly one row, so that the rows people read add up
 * to the spend line: the tasks' rows (their attempts and their PRs' conflict resolutions: the Cost
 * column), the failed work (failed and blocked tasks: the failures table), the integration PRs' jobs
 * (conflict resolutions and repairs; a verification runs no agent and costs nothing), and what a reset
 * or a changed graph cleared from the records (the budget keeps it spent). And what each merged
 * result cost: the run's spend divided over the tasks that merged and the workstreams that landed,
 * with the shares that went to failed work, resolutions and repairs.
 */
import { type Micros, roundedParts } from "../graph/amount.ts";
import { spentBy, taskSpent, usd } from "./budget.ts";
import type { RunState, TaskRun } from "./types.ts";

/** Tasks whose rows are in the failures table (or under the failure that blocks them). */
export const FAILED_WORK: ReadonlySet<TaskRun["status"]> = new Set(["failed", "blocked"]);

export interface SpendRows {
  /** The spend line: what the budget counted. */
  total: Micros;
  /** The tasks' rows in the task tables (the Cost column). */
  tasks: Micros;
  /** Failed and blocked tasks' attempts and resolutions (the failures table). */
  failures: Micros;
  /** Integration PRs' conflict resolutions. */
  resolutions: Micros;
  /** Integration branches' repairs. */
  repairs: Micros;
  /** Spent, then cleared from the records by a reset (or a changed graph): in no other row. */
  cleared: Micros;
}

/** The run's spend in rows that add up to it. */
export function spendRows(state: RunState): SpendRows {
  let tasks = 0;
  let failures = 0;
  for (const t of Object.values(state.tasks)) {
    if (FAILED_WORK.has(t.status)) failures += taskSpent(t);
    else tasks += taskSpent(t);
  }
  let resolutions = 0;
  let repairs = 0;
  for (const ws of Object.values(state.workstreams)) {
    resolutions += spentBy(ws.conflict?.resolutions ?? []);
    repairs += spentBy(ws.verification?.repairs ?? []);
  }
  const recorded = tasks + failures + resolutions + repairs;
  const total = Math.max(state.budget?.run.spentMicros ?? 0, recorded);
  return { total, tasks, failures, resolutions, repairs, cleared: total - recorded };
}

/** What each merged result cost, and the shares of the spend that went elsewhere than into it. */
export interface UnitCost {
  spentMicros: Micros;
  mergedTasks: number;
  landedWorkstreams: number;
  /** The run's spend over its merged tasks (null: none merged). */
  perMergedTaskMicros: Micros | null;
  /** The run's spend over its landed workstreams (null: none landed). */
  perLandedWorkstreamMicros: Micros | null;
  /**
   * Shares of the spend, from 0 to 1: failed work (every attempt that did not succeed, and what a
   * reset cleared), conflict resolutions (task and integration PRs'), repairs.
   */
  shares: { failed: number; resolutions: number; repairs: number };
}

export function unitCost(state: RunState): UnitCost {
  const rows = spendRows(state);
  const tasks = Object.values(state.tasks);
  const mergedTasks = tasks.filter((t) => t.status === "merged").length;
  const landedWorkstreams = Object.values(state.workstreams).filter(
    (w) => w.status === "merged" && w.integration === "merged",
  ).length;
  const taskResolutions = tasks.reduce((n, t) => n + spentBy(t.conflict?.resolutions ?? []), 0);
  // Failed work: every attempt that did not succeed, whether its task merged on a later one or not.
  const failedAttempts = tasks.reduce(
    (n, t) => n + spentBy(t.attempts.filter((a) => a.outcome !== null && a.outcome !== "succeeded")),
    0,
  );
  const share = (micros: Micros) => (rows.total === 0 ? 0 : micros / rows.total);
  const per = (n: number) => (n === 0 ? null : Math.round(rows.total / n));
  return {
    spentMicros: rows.total,
    mergedTasks,
    landedWorkstreams,
    perMergedTaskMicros: per(mergedTasks),
    perLandedWorkstreamMicros: per(landedWorkstreams),
    shares: {
      failed: share(failedAttempts + rows.cleared),
      resolutions: share(rows.resolutions + taskResolutions),
      repairs: share(rows.repairs),
    },
  };
}

/** "14%": a share as people read it ("<1%" for a little, never "0%" for some). */
export const percent = (share: number): string =>
  share > 0 && share < 0.005 ? "<1%" : `${Math.round(share * 100)}%`;

/**
 * One line on what the spend was made of and what each merged result cost: "$2.20 in the tasks' rows,
 * $0.40 on failed work, $0.10 on resolving integration PRs' conflicts, $0.10 on repairs. Per merged task
 * $0.03 (70 merged), per landed workstream $0.31 (7 landed); 14% of the spend went to failed work, 4%
 * to resolutions, 4% to repairs." Null when nothing was spent.
 */
export function costLine(state: RunState): string | null {
  const rows = spendRows(state);
  if (rows.total === 0) return null;
  const unit = unitCost(state);
  // Rounded together, so that the amounts shown add up to the spend shown, to the cent.
  const [tasks, failures, resolved, repaired, cleared] = roundedParts(rows.total, [
    rows.tasks,
    rows.failures,
    rows.resolutions,
    rows.repairs,
    rows.cleared,
  ]) as [Micros, Micros, Micros, Micros, Micros];
  const parts = [
    `${usd(tasks)} in the tasks' rows`,
    rows.failures ? `${usd(failures)} on failed work` : "",
    rows.resolutions ? `${usd(resolved)} on resolving integration PRs' conflicts` : "",
    rows.repairs ? `${usd(repaired)} on repairs` : "",
    rows.cleared ? `${usd(cleared)} cleared by a reset` : "",
  ].filter(Boolean);
  const merged = (n: number, word: string) => `${n.toLocaleString("en-US")} ${word}`;
  const perTask =
    unit.perMergedTaskMicros === null
      ? "no task merged yet"
      : `per merged task ${usd(unit.perMergedTaskMicros)} (${merged(unit.mergedTasks, "merged")})`;
  const perWs =
    unit.perLandedWorkstreamMicros === null
      ? ""
      : `, per landed workstream ${usd(unit.perLandedWorkstreamMicros)} (${merged(unit.landedWorkstreams, "landed")})`;
  const { failed, resolutions, repairs } = unit.shares;
  const shares = [
    failed ? `${percent(failed)} to failed work` : "",
    resolutions ? `${percent(resolutions)} to resolutions` : "",
    repairs ? `${percent(repairs)} to repairs` : "",
  ].filter(Boolean);
  const went = shares.length ? `; of the spend, ${shares.join(", ")}` : "";
  return `Of it: ${parts.join(", ")}. Cost ${perTask}${perWs}${went}.`;
}
