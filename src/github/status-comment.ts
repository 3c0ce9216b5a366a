/**
 * The run's status comment, edited in place on the tracking issue and on each open integration PR.
 * It reads top-down as a person needs it at any size: the headline with the run's real state; what
 * the run waits for and who must act, with links (a spent budget, the failures with what each
 * blocks, conflicts, reviews, then what moves on its own); what needs attention (the failures, the
 * most blocking first, and the running and open rows by workstream); the chart, or a table of the
 * workstreams where a chart could not be read; the blocked tasks by what blocks them; every other
 * task, cut to what is left of GitHub's 65,536 characters.
 */
import { spendLine, taskSpent, usd } from "../engine/budget.ts";
import { costLine } from "../engine/spend.ts";
import { type Breakage, count, plural, standing, STATUS_WORDS, statusCounts } from "../engine/progress.ts";
import { rootCauses } from "../engine/blocking.ts";
import { leftToPerson, resolving } from "../engine/conflicts.ts";
import { type Hold, holds } from "../engine/holds.ts";
import type { RunState, TaskRun } from "../engine/types.ts";
import type { Plan } from "../plan/model.ts";
import { unitGatesNote } from "../plan/resolution.ts";
import { agentText, BODY_LIMIT, cell, reasonText, rowReason, statusMarker, takeLines } from "./render.ts";
import { breakageText, holdWords, named, prLink, waitingFor } from "./waiting-lines.ts";
import { cellCode, code, duration, quoteIds } from "./words.ts";
import { workstreamChart, workstreamState } from "./workstream-chart.ts";

export { named, waitingFor };

export interface StatusLinks {
  trackingIssue?: number | null;
  /** The page of an attempt's Actions run. */
  /** An attempt's job page (`task`: the attempt's task, whose repository ran it). */
  job?: (job: string, task?: string) => string;
  /** The graph file at the run's commit: the full graph, when the chart is drawn by workstream. */
  graph?: string;
  /** What the orchestrator cannot do where it runs, and how to fix it (one line, shown under the commands). */
  notice?: string;
}

/** Rows shown under their workstream in "Needs attention": what holds a workstream now. */
const ACTIVE = new Set<TaskRun["status"]>(["running", "pr_open"]);

/** The headline: the run's state, then its tasks counted by status. */
export function runHeadline(plan: Plan, state: RunState): string {
  return `${standing(plan, state).phase} (${statusCounts(state)})`;
}

/** A task table's columns: under a workstream's heading, or with a workstream column. */
const COLUMNS = ["Task", "Workstream", "Status", "Attempt", "PR", "Duration", "Cost", "Concerns"] as const;
/** Columns a table leaves out when no row of it has anything in them. */
const OPTIONAL = new Set(["Attempt", "PR", "Duration", "Cost", "Concerns"]);

/**
 * A task table of `rows` (each a row's cells, in COLUMNS order): its head and its rows, without the
 * columns no row fills, so that a table of tasks still to do, with long workstream ids, keeps within
 * the comment's 806 px instead of scrolling sideways for eight mostly empty columns (issue 44).
 */
function taskTable(rows: string[][], withWorkstream: boolean): { head: string[]; rows: string[] } {
  const kept = COLUMNS.flatMap((name, i) =>
    (name === "Workstream" && !withWorkstream) || (OPTIONAL.has(name) && rows.every((r) => r[i] === ""))
      ? []
      : [i],
  );
  return {
    head: [`| ${kept.map((i) => COLUMNS[i]).join(" | ")} |`, `|${kept.map(() => "---|").join("")}`],
    rows: rows.map((r) => `| ${kept.map((i) => r[i]).join(" | ")} |`),
  };
}

/** What a run's rows need besides the task: links, the time, the plan, what holds each task. */
interface RowContext {
  plan: Plan;
  state: RunState;
  now: number;
  links: StatusLinks;
  holds: Map<string, Hold>;
}

/** A task's status in its row: what it does, or why it stops and what to do about it. */
function statusCell(ctx: RowContext, id: string, t: TaskRun): string {
  const reason = (max: number) => cell(quoteIds(rowReason(t.reason ?? "", max), ctx.plan, cellCode));
  if (t.status === "pr_open") {
    if (resolving(t.conflict)) return "resolving conflicts";
    // What to do is said under the table (byHandLines): its branch names are code that cannot wrap,
    // and in a cell they made the row wider than the comment.
    if (leftToPerson(t)) return "waits for you: merge by hand, as said under this table";
    return t.pr === null ? "opening its PR" : STATUS_WORDS.pr_open;
  }
  if ((t.status === "failed" || t.status === "blocked") && t.reason)
    return `${STATUS_WORDS[t.status]}: ${reason(120)}`;
  if (t.status === "pending") {
    const waits = holdWords(ctx.plan, ctx.state, ctx.holds.get(id));
    return waits ? `${STATUS_WORDS.pending}, ${waits}` : STATUS_WORDS.pending;
  }
  return STATUS_WORDS[t.status];
}

/** A task's row, as cells in COLUMNS order (its workstream's empty under its workstream's heading). */
function taskCells(ctx: RowContext, id: string, workstream?: string): string[] {
  const t = ctx.state.tasks[id]!;
  const first = t.attempts[0];
  const end = t.mergedAt ?? (t.status === "running" || t.status === "pr_open" ? ctx.now : null);
  const time = first && end ? duration(end - (first.startedAt ?? first.dispatchedAt)) : "";
  const cost = taskSpent(t);
  const pr = t.pr ? prLink(t.pr, ctx.plan) : "";
  const job = t.attempts.at(-1)?.job;
  const attempt =
    t.attempt && job && ctx.links.job ? `[${t.attempt}](${ctx.links.job(job, id)})` : String(t.attempt || "");
  const concerns = t.concerns.length + t.opsConcerns.length;
  return [
    cellCode(id),
    workstream ? cellCode(workstream) : "",
    statusCell(ctx, id, t),
    attempt,
    pr,
    time,
    cost ? usd(cost) : "",
    concerns ? String(concerns) : "",
  ];
}

/**
 * What to do for each task of `ids` whose PR's conflict waits for a person, under its table: the
 * reason begins with it ("merge `x` into `y` by hand"), and a cut keeps or drops each clause after it
 * whole.
 */
function byHandLines(ctx: RowContext, ids: string[]): string[] {
  const byHand = ids.filter((id) => leftToPerson(ctx.state.tasks[id]!));
  return byHand.length
    ? [
        "",
        ...byHand.map(
          (id) =>
            `- ${code(id)} waits for you: ${quoteIds(reasonText(ctx.state.tasks[id]!.reason ?? "", 400), ctx.plan)}.`,
        ),
      ]
    : [];
}

/** The failures, the most blocking first, with what each blocks. */
function failureLines(plan: Plan, state: RunState, breakages: Breakage[]): string[] {
  if (breakages.length === 0) return [];
  const blocked = breakages.reduce((n, b) => n + b.blocked.length, 0);
  const lines = [
    "",
    `**Failures** (${count(breakages.length)}${blocked ? `, blocking ${plural(blocked, "task")}` : ""})`,
    "",
    "| What broke | Workstream | Why | Blocks | Cost |",
    "|---|---|---|---|---|",
  ];
  for (const b of breakages) {
    const what = "task" in b.root ? cellCode(b.root.task) : `workstream ${cellCode(b.root.workstream)}`;
    const ws = "task" in b.root ? plan.tasks.get(b.root.task)!.workstreamId : b.root.workstream;
    const status = "task" in b.root ? STATUS_WORDS[state.tasks[b.root.task]!.status] : "failed";
    const why = cell(quoteIds(rowReason(b.reason ?? status, 160), plan, cellCode));
    const across = new Set(b.blocked.map((id) => plan.tasks.get(id)!.workstreamId)).size;
    const blocks = b.blocked.length
      ? `${plural(b.blocked.length, "task")}${across > 1 ? ` in ${count(across)} workstreams` : ""}`
      : "";
    // Its own attempts when it failed (a cancelled task's are in its row), and those of what it blocks.
    const own = "task" in b.root && status === "failed" ? taskSpent(state.tasks[b.root.task]!) : 0;
    const cost = b.blocked.reduce((sum, id) => sum + taskSpent(state.tasks[id]!), own);
    lines.push(
      `| ${what} | ${cellCode(ws)} | ${status === "failed" ? why : `${status}: ${why}`} | ${blocks} | ${cost ? usd(cost) : ""} |`,
    );
  }
  return lines;
}

/** The running and open rows, one table per workstream, under the workstream's own state. */
function activeLines(ctx: RowContext): string[] {
  const { plan, state } = ctx;
  const lines: string[] = [];
  const roots = rootCauses(plan, state);
  for (const [wsId, ids] of plan.tasksByWorkstream) {
    const rows = ids.filter((id) => ACTIVE.has(state.tasks[id]!.status));
    if (rows.length === 0) continue;
    const table = taskTable(
      rows.map((id) => taskCells(ctx, id)),
      false,
    );
    lines.push(
      "",
      `**${code(wsId)}** (${workstreamState(plan, state, wsId, { roots, holds: ctx.holds })})`,
      "",
      ...table.head,
      ...table.rows,
      ...byHandLines(ctx, rows),
    );
  }
  return lines;
}

/** The blocked tasks, by what blocks them, each group's tasks named up to a line's worth. */
function blockedLines(plan: Plan, breakages: Breakage[]): string[] {
  const groups = breakages.filter((b) => b.blocked.length > 0);
  if (groups.length === 0) return [];
  const total = groups.reduce((n, b) => n + b.blocked.length, 0);
  return [
    "",
    `<details><summary>Blocked tasks (${count(total)}), by what blocks them</summary>`,
    "",
    ...groups.map(
      (b) =>
        `- ${plural(b.blocked.length, "task")} blocked by ${breakageText(b, plan, 80)}: ${named(b.blocked, code, 40)}`,
    ),
    "",
    "</details>",
  ];
}

/** Until the first integration PR opens, the word that nothing checks the whole tree (plan/resolution.ts). */
function wholeTreeNote(plan: Plan, state: RunState): string[] {
  if (Object.values(state.workstreams).some((w) => w.integration !== "none")) return [];
  const note = unitGatesNote(plan);
  return note ? ["", `> [!NOTE]`, `> ${quoteIds(agentText(note, 1_000))}.`] : [];
}

/** Status order of the "Other tasks" table: what is still to come first, what is done last. */
const OTHER_ORDER: TaskRun["status"][] = ["pending", "cancelled", "merged", "completed"];

export function statusComment(plan: Plan, state: RunState, now: number, links: StatusLinks = {}): string {
  const ctx: RowContext = { plan, state, now, links, holds: holds(plan, state) };
  const waits = waitingFor(plan, state, links, ctx.holds);
  const { breakages } = standing(plan, state);
  const head = [
    statusMarker(state.runKey),
    `### agentrelay run ${code(state.runKey)}: ${runHeadline(plan, state)}`,
    ...(waits.length ? ["", ...waits] : []),
    ...(state.budget || plan.graph.settings.maxCostMicros !== null
      ? ["", `${spendLine(state, plan.graph, code)}.`, ...[costLine(state) ?? []].flat()]
      : []),
    "",
    links.trackingIssue
      ? `Tracking issue #${links.trackingIssue}. Commands: \`/agentrelay status\`, \`retry TASK\`, \`cancel [TASK]\`, \`reset TASK\`, \`budget +USD\`.`
      : "Commands: `/agentrelay status`, `retry TASK`, `cancel [TASK]`, `reset TASK`, `budget +USD`.",
    ...(links.notice ? ["", `> [!NOTE]`, `> ${links.notice}`] : []),
    ...wholeTreeNote(plan, state),
  ];
  const stateBranch = `the full state is on the ${code(`agentrelay-state/${state.graph}`)} branch`;
  let budget = BODY_LIMIT - 500 - head.join("\n").length;

  const attention = [...failureLines(plan, state, breakages), ...activeLines(ctx)];
  const attentionShown = takeLines(
    attention,
    budget / 2,
    (n) => `\n… ${plural(n, "more line")} that need attention (${stateBranch}).`,
  );
  budget -= attentionShown.join("\n").length;

  const chartLines = workstreamChart(plan, state, links.graph, ctx.holds);
  const chartFits = chartLines.join("\n").length < budget / 3;
  if (chartFits) budget -= chartLines.join("\n").length;

  const blocked = takeLines(
    blockedLines(plan, breakages),
    budget / 3,
    (n) => `\n… and ${plural(n, "more group")}.`,
  );
  if (blocked.length && !blocked.at(-1)!.startsWith("</details>")) blocked.push("", "</details>");
  budget -= blocked.join("\n").length;

  const others = OTHER_ORDER.flatMap((s) => plan.order.filter((id) => state.tasks[id]!.status === s));
  const left = (n: number) => {
    const rest = new Map<string, number>();
    for (const id of others.slice(others.length - n)) {
      const words = STATUS_WORDS[state.tasks[id]!.status];
      rest.set(words, (rest.get(words) ?? 0) + 1);
    }
    const counts = [...rest].map(([w, k]) => `${count(k)} ${w}`).join(", ");
    return `\n… and ${plural(n, "more task")} (${counts}; ${stateBranch}).`;
  };
  const otherTable = taskTable(
    others.map((id) => taskCells(ctx, id, plan.tasks.get(id)!.workstreamId)),
    true,
  );
  const otherLines = others.length
    ? [
        "",
        `<details><summary>${attention.length ? "Other tasks" : "Tasks"} (${count(others.length)})</summary>`,
        "",
        ...otherTable.head,
        ...takeLines(otherTable.rows, budget - 200, left),
        "",
        "</details>",
      ]
    : [];
  return [
    ...head,
    ...(attention.length ? ["", "#### Needs attention", ...attentionShown] : []),
    ...(chartFits ? chartLines : []),
    ...blocked,
    ...otherLines,
  ].join("\n");
}
