/**
 * The report a local run ends with (and `agentrelay status` prints): the outcome, or what the run
 * waits for and what to do; each task with its cost and reason, and the end of a failed gate's
 * output; each workstream with where its work is and why it stopped.
 */
import { AUTO_MERGE_FAILED } from "../engine/apply-event.ts";
import { spendLine, spentBy, taskSpent, usd, waitsOnBudget } from "../engine/budget.ts";
import { leftToPerson } from "../engine/conflicts.ts";
import { STATUS_WORDS, WORKSTREAM_WORDS } from "../engine/progress.ts";
import { costLine, spendRows, unitCost } from "../engine/spend.ts";
import type { Conflict, RunState, Verification, WorkstreamStatus } from "../engine/types.ts";
import { landingStage } from "../engine/landing.ts";
import { reproduce } from "../engine/verification.ts";
import { count, type Graph, integrationBranch, repositoryFullName, taskBranch } from "../graph/model.ts";
import { buildPlan } from "../plan/plan.ts";
import { EXIT } from "./io.ts";

/** Locally there is no PR: an integration branch ready to land waits to be merged into its target. */
const LOCAL_WORDS: Partial<Record<WorkstreamStatus, string>> = { pr_open: "to merge" };

/** An attempt's word that its network was not filtered, and why (attempt/egress/egress.ts). */
const isNetworkLine = (concern: string) => concern.startsWith("network: not filtered");

/** What a scripted run's spend is: metered as a real one, with nothing charged. */
export const SCRIPTED_SPEND = "metered: the scripted model's tokens at list price; no money was charged";

/** Status columns as wide as their longest word, so that the columns after them line up. */
const widest = (words: Record<string, string>) => Math.max(...Object.values(words).map((w) => w.length));
const TASK_COLUMN = widest(STATUS_WORDS);
const WORKSTREAM_COLUMN = widest(WORKSTREAM_WORDS);

/** The exit code of a command that carried on or showed a run (main.ts's EXIT_CODES). */
export const exitOf = (state: RunState): number =>
  state.outcome === "succeeded" ? EXIT.ok : state.outcome !== null ? EXIT.failed : EXIT.waiting;

/** What resolving a PR's conflicts took: how many attempts, on which files, how the last one ended. */
function resolutions(conflict: Conflict | undefined): string | null {
  const tried = conflict?.resolutions.filter((r) => r.outcome !== "lost") ?? [];
  if (tried.length === 0) return null;
  const cost = spentBy(tried);
  const last = tried.at(-1)!;
  const files = conflict!.files.length ? ` in ${conflict!.files.join(", ")}` : "";
  return `conflicts${files}: ${tried.length} resolution${tried.length === 1 ? "" : "s"}, ${usd(cost)}, the last ${last.outcome ?? "running"}${last.reason ? ` (${last.reason})` : ""}`;
}

/** What verifying and repairing an integration branch took, and how the last of them ended. */
function verifications(v: Verification | undefined): string | null {
  const runs = v?.runs.filter((r) => r.outcome !== "lost") ?? [];
  const repairs = v?.repairs.filter((r) => r.outcome !== "lost") ?? [];
  if (runs.length === 0 && repairs.length === 0) return null;
  const state = v!.passed ? "verified" : v!.toPerson ? "not verified" : "verifying";
  return `${state}: ${count(runs.length, "verification")}, ${count(repairs.length, "repair")}, ${usd(spentBy(repairs))}`;
}

const indent = (text: string, prefix: string) =>
  text
    .split("\n")
    .slice(-15)
    .map((l) => `${prefix}${l}`);

/** What a run that has not finished waits for, as one line that says what to do. */
export function waitingFor(state: RunState, graph: Graph): string {
  const budgets = waitsOnBudget(state);
  if (budgets.length > 0 && state.candidates.length > 0)
    return `waiting for budget: ${budgets.join("; ")}; raise it with \`agentrelay budget FILE +USD [WORKSTREAM|TASK] --repo DIR\``;
  const conflicted = Object.entries(state.tasks).find(([, t]) => leftToPerson(t));
  if (conflicted)
    return `waiting for you: task ${conflicted[0]}'s PR: ${conflicted[1].reason}, then run again`;
  const open = graph.workstreams.filter((w) => state.workstreams[w.id]?.status === "pr_open");
  // An auto-merge that failed says why (the target checked out with uncommitted changes, say): that
  // comes first, since merging by hand would meet the same cause.
  const failed = open
    .map((w) => state.workstreams[w.id]!.reason)
    .find((r) => r?.startsWith(AUTO_MERGE_FAILED));
  if (failed) return `waiting for you: ${failed.slice(AUTO_MERGE_FAILED.length)}`;
  const unverified = open.find((w) => state.workstreams[w.id]!.verification?.toPerson);
  if (unverified)
    return `waiting for you: ${integrationBranch(graph.name, unverified.id)} is ${state.workstreams[unverified.id]!.reason}; to see it: ${reproduce(buildPlan(graph), unverified.id)}; fix it there and merge it into ${unverified.mergeTargetBranch} (git merge), then run again`;
  // Offered to a person only once it may land (engine/landing.ts): one still to verify is the run's to do.
  const plan = buildPlan(graph);
  const toMerge = open.filter((w) => landingStage(plan, state, w.id)?.stage === "merge");
  if (toMerge.length === 0) return "not finished: run `agentrelay run` again to go on";
  const merges = toMerge.map((w) => `${integrationBranch(graph.name, w.id)} into ${w.mergeTargetBranch}`);
  return `waiting for you: merge ${merges.join(", ")} (git merge), then run again`;
}

export interface ReportOptions {
  /** The pid of the live runner, when one is (for `status`): the run is going on, not waiting. */
  runner?: number | null;
  /**
   * The run's model was the scripted one: its costs are the tokens its answers report, priced at the
   * model's list price as every call is metered (attempt/model-meter.ts), but no money was charged.
   */
  scripted?: boolean;
}

export function runReport(state: RunState, repo: string, graph: Graph, options: ReportOptions = {}): string {
  const headline =
    state.outcome ??
    (options.runner != null
      ? `running (a runner is live, pid ${options.runner}; retry, cancel and reset go to it)`
      : waitingFor(state, graph));
  const lines = ["", `Run ${state.runKey}: ${headline}`];
  // How the attempts' network ran is the machine's, not a task's: said once for the run.
  const network = [
    ...new Set(Object.values(state.tasks).flatMap((t) => t.opsConcerns.filter(isNetworkLine))),
  ];
  lines.push(...network, "");
  let cost = 0;
  for (const [id, t] of Object.entries(state.tasks)) {
    const spent = taskSpent(t);
    cost += spent;
    lines.push(
      `  ${id.padEnd(24)} ${(t.status === "pr_open" ? LOCAL_WORDS.pr_open! : STATUS_WORDS[t.status]).padEnd(TASK_COLUMN)} attempts ${t.attempt}  ${usd(spent)}${t.reason ? `  (${t.reason})` : ""}`,
    );
    const gateOutput = t.status === "failed" ? t.attempts[t.attempt - 1]?.gateOutput : undefined;
    if (gateOutput) lines.push("      gate output (end):", ...indent(gateOutput, "      | "));
    for (const c of t.concerns) lines.push(`      design concern: ${c}`);
    for (const c of t.opsConcerns) if (!isNetworkLine(c)) lines.push(`      ops concern: ${c}`);
    const resolved = resolutions(t.conflict);
    if (resolved) lines.push(`      ${resolved}`);
  }
  lines.push("", "Workstreams:");
  for (const ws of graph.workstreams) {
    const w = state.workstreams[ws.id]!;
    const where =
      (w.status === "merged" && w.integration === "merged"
        ? `merged into ${ws.mergeTargetBranch}`
        : integrationBranch(graph.name, ws.id)) +
      (ws.repository === undefined ? "" : ` of ${repositoryFullName(graph, ws.repository)}`);
    lines.push(
      `  ${ws.id.padEnd(24)} ${(LOCAL_WORDS[w.status] ?? WORKSTREAM_WORDS[w.status]).padEnd(WORKSTREAM_COLUMN)} ${where}${w.reason ? `  (${w.reason})` : ""}`,
    );
    const resolved = resolutions(w.conflict);
    if (resolved) lines.push(`      ${resolved}`);
    const verified = verifications(w.verification);
    if (verified) lines.push(`      ${verified}`);
    if (w.verification?.toPerson && w.verification.failure)
      lines.push("      what fails (end):", ...indent(w.verification.failure, "      | "));
    cost += spentBy([...(w.conflict?.resolutions ?? []), ...(w.verification?.repairs ?? [])]);
  }
  const of = costLine(state);
  lines.push(
    "",
    (state.budget ? spendLine(state, graph, (id) => id) : `Spent ${usd(cost)}`) +
      (options.scripted ? ` (${SCRIPTED_SPEND})` : ""),
    ...(of ? [of] : []),
    `Work: task branches ${taskBranch(graph.name, "<task>")} in ${repo}${graph.repositories?.length ? ` and the clones of ${graph.repositories.map((r) => r.fullName).join(", ")}` : ""}`,
    `State: git log -p refs/agentrelay/runs/${state.runKey} (in ${repo})`,
  );
  return lines.join("\n");
}

/** Micro-dollars as the JSON's dollars (exact: a micro-dollar is 1e-6). */
const dollars = (micros: number | null) => (micros === null ? null : micros / 1_000_000);

/**
 * `agentrelay status --json`: the run's outcome (null while it goes on), what it waits for, every task
 * and workstream, the spend in its rows (they add up to `spentUsd`), and what each merged task and
 * landed workstream cost, with the shares of the spend on failed work, resolutions and repairs.
 */
export function statusJson(state: RunState, graph: Graph, options: ReportOptions = {}): object {
  const rows = spendRows(state);
  const unit = unitCost(state);
  return {
    runKey: state.runKey,
    outcome: state.outcome,
    ...(state.outcome === null
      ? { waitingFor: options.runner != null ? "a live runner" : waitingFor(state, graph) }
      : {}),
    spentUsd: dollars(rows.total),
    spendRows: {
      tasksUsd: dollars(rows.tasks),
      failuresUsd: dollars(rows.failures),
      resolutionsUsd: dollars(rows.resolutions),
      repairsUsd: dollars(rows.repairs),
      clearedUsd: dollars(rows.cleared),
    },
    cost: {
      mergedTasks: unit.mergedTasks,
      landedWorkstreams: unit.landedWorkstreams,
      perMergedTaskUsd: dollars(unit.perMergedTaskMicros),
      perLandedWorkstreamUsd: dollars(unit.perLandedWorkstreamMicros),
      shares: unit.shares,
    },
    tasks: Object.fromEntries(
      Object.entries(state.tasks).map(([id, t]) => [
        id,
        { status: t.status, attempts: t.attempt, costUsd: dollars(taskSpent(t)), reason: t.reason },
      ]),
    ),
    workstreams: Object.fromEntries(
      Object.entries(state.workstreams).map(([id, w]) => [id, { status: w.status, reason: w.reason }]),
    ),
  };
}
