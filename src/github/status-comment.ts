/**
 * The run's status comment, edited in place on the tracking issue and on each open integration PR.
 * It reads top-down as a person needs it at any size: the headline; what the run waits for and who
 * must act, with links; the rows that need attention (failed, running, waiting for a merge) grouped
 * by workstream, always shown; the chart at the level that fits; then every other task, cut to what
 * is left of GitHub's 65,536 characters.
 */
import type { RunState, TaskRun } from "../engine/types.ts";
import { type ChartLevel, mermaidChart } from "../plan/mermaid.ts";
import type { Plan } from "../plan/plan.ts";
import { spendLine, taskSpent, waitsOnBudget } from "../engine/budget.ts";
import { leftToPerson, resolving } from "../engine/conflicts.ts";
import { type ResolutionSubject, resolverOf } from "../plan/resolution.ts";
import { agentText, BODY_LIMIT, duration, statusMarker, takeLines } from "./render.ts";

export interface StatusLinks {
  trackingIssue?: number | null;
  /** The page of an attempt's Actions run. */
  job?: (job: string) => string;
  /** The graph file at the run's commit: the full graph, when the chart is drawn by workstream. */
  graph?: string;
}

const ATTENTION = new Set<TaskRun["status"]>(["failed", "running", "pr_open"]);
/** How many tasks a line of the "waiting for" list names before it counts the rest. */
const NAMED = 5;

const cell = (text: string) => text.replace(/\|/g, "\\|").replace(/\n/g, " ");

export function runHeadline(state: RunState): string {
  const counts = new Map<string, number>();
  for (const t of Object.values(state.tasks)) counts.set(t.status, (counts.get(t.status) ?? 0) + 1);
  const parts = [...counts].map(([s, n]) => `${n} ${s}`).join(", ");
  const phase = state.outcome
    ? state.outcome.replace(/_/g, " ")
    : state.cancelled
      ? "cancelling"
      : state.active === 0 && state.candidates.length > 0 && waitsOnBudget(state).length > 0
        ? "waiting for budget"
        : Object.values(state.workstreams).some((w) => w.status === "pr_open") &&
            !Object.values(state.tasks).some((t) => t.status === "running" || t.status === "pr_open") &&
            !Object.values(state.workstreams).some((w) => resolving(w.conflict))
          ? "waiting for review"
          : "running";
  return `${phase} (${parts})`;
}

const named = (ids: string[], show: (id: string) => string) =>
  ids.slice(0, NAMED).map(show).join(", ") + (ids.length > NAMED ? ` and ${ids.length - NAMED} more` : "");

const link = (pr: { number: number; url: string } | null) => (pr ? `[#${pr.number}](${pr.url})` : "its PR");

/** What the run waits for, and who must act: a person first, then GitHub (jobs, checks). */
export function waitingFor(plan: Plan, state: RunState, links: StatusLinks = {}): string[] {
  const lines: string[] = [];
  const jobLink = (name: string, job: string | null | undefined) =>
    job && links.job ? `[${name}](${links.job(job)})` : name;
  // Resolutions running: which PR, which branch takes which, which files.
  const resolutions: string[] = [];
  const resolutionOf = (pr: string, subject: ResolutionSubject, conflict: TaskRun["conflict"]) => {
    const { branch, target } = resolverOf(plan, subject);
    const record = conflict!.resolutions.at(-1)!;
    const files = conflict!.files.length ? ` (${named(conflict!.files, (f) => `\`${f}\``)})` : "";
    resolutions.push(
      `${pr}: ${jobLink(`attempt ${record.n}`, record.job)} merges \`${target}\` into \`${branch}\`${files}`,
    );
  };
  for (const [wsId, ws] of Object.entries(state.workstreams))
    if (ws.status === "pr_open" && resolving(ws.conflict))
      resolutionOf(link(ws.pr), { workstream: wsId }, ws.conflict);
  for (const id of plan.order) {
    const t = state.tasks[id]!;
    if (t.status === "pr_open" && resolving(t.conflict))
      resolutionOf(link(t.pr), { workstream: plan.tasks.get(id)!.workstreamId, task: id }, t.conflict);
  }
  if (resolutions.length > 0)
    lines.push(
      `- Resolving conflicts (an agent merges, then the PR merges again): ${resolutions.slice(0, NAMED).join("; ")}${resolutions.length > NAMED ? ` and ${resolutions.length - NAMED} more` : ""}.`,
    );
  for (const [wsId, ws] of Object.entries(state.workstreams)) {
    if (ws.status !== "pr_open" || resolving(ws.conflict)) continue;
    const def = plan.workstreams.get(wsId)!;
    const merge = `merge ${link(ws.pr)} (\`${wsId}\` into \`${def.mergeTargetBranch}\`)`;
    if (def.autoMerge && !ws.autoMergeSkipped) {
      lines.push(`- Waiting for GitHub: ${link(ws.pr)} merges itself once its required checks pass.`);
      continue;
    }
    const raisedIn = (plan.tasksByWorkstream.get(wsId) ?? []).filter(
      (id) => state.tasks[id]!.concerns.length > 0,
    );
    const why = !def.autoMerge
      ? "`auto_merge` is off for this workstream"
      : raisedIn.length > 0
        ? `a design concern was raised in ${named(raisedIn, (id) => `\`${id}\``)}`
        : agentText(ws.reason ?? "the automatic merge did not happen", 300);
    lines.push(`- **Waiting for you**: ${merge}; ${why}. Close it instead to fail the workstream.`);
  }
  const budgets = waitsOnBudget(state);
  if (budgets.length > 0 && state.candidates.length > 0 && !state.cancelled)
    lines.push(
      `- **Waiting for you**: ${budgets.join("; ")}. \`/agentrelay budget +USD [WORKSTREAM|TASK]\` raises it and goes on.`,
    );
  const failed = plan.order.filter((id) => state.tasks[id]!.status === "failed");
  if (failed.length > 0 && !state.cancelled)
    lines.push(
      `- **Waiting for you**: ${named(failed, (id) => `\`${id}\` failed`)}; \`/agentrelay retry TASK\` runs one again (its dependents are blocked until then).`,
    );
  const running = plan.order.filter((id) => state.tasks[id]!.status === "running");
  if (running.length > 0)
    lines.push(
      `- Waiting for ${running.length} job${running.length > 1 ? "s" : ""}: ${named(running, (id) => {
        const job = state.tasks[id]!.attempts.at(-1)?.job;
        return job && links.job ? `[\`${id}\`](${links.job(job)})` : `\`${id}\``;
      })}.`,
    );
  const conflicted = plan.order.filter((id) => leftToPerson(state.tasks[id]!));
  for (const id of conflicted.slice(0, NAMED))
    lines.push(
      `- **Waiting for you**: ${link(state.tasks[id]!.pr)} (\`${id}\`) ${agentText(state.tasks[id]!.reason ?? "has conflicts", 300)}.`,
    );
  if (conflicted.length > NAMED)
    lines.push(`- **Waiting for you**: ${conflicted.length - NAMED} more task PRs with conflicts (below).`);
  const prs = plan.order.filter((id) => {
    const t = state.tasks[id]!;
    return t.status === "pr_open" && !resolving(t.conflict) && !leftToPerson(t);
  });
  if (prs.length > 0)
    lines.push(
      `- Waiting for ${prs.length} task PR${prs.length > 1 ? "s" : ""} to merge (required checks or reviews): ${named(prs, (id) => link(state.tasks[id]!.pr))}.`,
    );
  return lines;
}

/** A task table: under a workstream's heading, or with a workstream column. */
const tableHead = (withWorkstream: boolean) =>
  withWorkstream
    ? [
        "| Task | Workstream | Status | Attempt | PR | Duration | Cost | Concerns |",
        "|---|---|---|---|---|---|---|---|",
      ]
    : ["| Task | Status | Attempt | PR | Duration | Cost | Concerns |", "|---|---|---|---|---|---|---|"];

function taskRow(id: string, t: TaskRun, now: number, links: StatusLinks, workstream?: string): string {
  const first = t.attempts[0];
  const end = t.mergedAt ?? (t.status === "running" || t.status === "pr_open" ? now : null);
  const time = first && end ? duration(end - (first.startedAt ?? first.dispatchedAt)) : "";
  const cost = taskSpent(t);
  const pr = t.pr ? `[#${t.pr.number}](${t.pr.url})` : "";
  const job = t.attempts.at(-1)?.job;
  const attempt = t.attempt && job && links.job ? `[${t.attempt}](${links.job(job)})` : t.attempt || "";
  const status =
    t.status === "pr_open" && resolving(t.conflict)
      ? "resolving conflicts"
      : t.reason && (t.status === "failed" || t.status === "blocked" || leftToPerson(t))
        ? `${t.status}: ${cell(agentText(t.reason, 120))}`
        : t.status;
  const concerns = t.concerns.length + t.opsConcerns.length;
  return `| \`${id}\` |${workstream ? ` ${workstream} |` : ""} ${status} | ${attempt} | ${pr} | ${time} | ${cost ? `$${cost.toFixed(2)}` : ""} | ${concerns || ""} |`;
}

/** The rows that need attention, one table per workstream, under the workstream's own state. */
function attentionLines(plan: Plan, state: RunState, now: number, links: StatusLinks): string[] {
  const lines: string[] = [];
  for (const [wsId, ids] of plan.tasksByWorkstream) {
    const rows = ids.filter((id) => ATTENTION.has(state.tasks[id]!.status));
    if (rows.length === 0) continue;
    const ws = state.workstreams[wsId]!;
    const reason = ws.reason ? `: ${cell(agentText(ws.reason, 200))}` : "";
    lines.push("", `**\`${wsId}\`** (${ws.status}${reason})`, "", ...tableHead(false));
    for (const id of rows) lines.push(taskRow(id, state.tasks[id]!, now, links));
  }
  return lines;
}

const CHART_TITLE: Record<ChartLevel, string> = {
  tasks: "DAG",
  workstreams: "Workstreams (the graph is too large to draw task by task)",
  none: "",
};

export function statusComment(plan: Plan, state: RunState, now: number, links: StatusLinks = {}): string {
  const waits = waitingFor(plan, state, links);
  const head = [
    statusMarker(state.runKey),
    `### agentrelay run \`${state.runKey}\`: ${runHeadline(state)}`,
    ...(waits.length ? ["", ...waits] : []),
    ...(state.budget || plan.graph.settings.maxCostUsd !== null
      ? ["", `${spendLine(state, plan.graph)}.`]
      : []),
    "",
    links.trackingIssue
      ? `Tracking issue #${links.trackingIssue}. Commands: \`/agentrelay status\`, \`retry TASK\`, \`cancel [TASK]\`, \`reset TASK\`, \`budget +USD\`.`
      : "Commands: `/agentrelay status`, `retry TASK`, `cancel [TASK]`, `reset TASK`, `budget +USD`.",
  ];
  const stateBranch = `the full state is on the \`agentrelay-state/${state.graph}\` branch`;
  let budget = BODY_LIMIT - 500 - head.join("\n").length;

  const attention = attentionLines(plan, state, now, links);
  const attentionShown = takeLines(
    attention,
    budget,
    (n) => `\n… ${n} more lines that need attention (${stateBranch}).`,
  );
  budget -= attentionShown.join("\n").length;

  const chart = mermaidChart(plan, (id) => state.tasks[id]?.status ?? "");
  const fullGraph = links.graph ? ` [The graph file](${links.graph}) has every task.` : "";
  const chartLines =
    chart.text === null
      ? ["", `_The graph is too large to draw (${plan.workstreams.size} workstreams).${fullGraph}_`]
      : [
          "",
          `<details><summary>${CHART_TITLE[chart.level]}</summary>`,
          "",
          "```mermaid",
          chart.text,
          "```",
          ...(chart.level === "workstreams" && fullGraph ? ["", fullGraph.trim()] : []),
          "</details>",
        ];
  const chartFits = chartLines.join("\n").length < budget / 2;
  if (chartFits) budget -= chartLines.join("\n").length;

  const others = plan.order.filter((id) => !ATTENTION.has(state.tasks[id]!.status));
  const otherLines = others.length
    ? [
        "",
        `<details><summary>${attention.length ? "Other tasks" : "Tasks"} (${others.length})</summary>`,
        "",
        ...tableHead(true),
        ...takeLines(
          others.map((id) => taskRow(id, state.tasks[id]!, now, links, plan.tasks.get(id)!.workstreamId)),
          budget - 200,
          (n) => `\n… and ${n} more tasks (${stateBranch}).`,
        ),
        "",
        "</details>",
      ]
    : [];
  return [
    ...head,
    ...(attention.length ? ["", "#### Needs attention", ...attentionShown] : []),
    ...(chartFits ? chartLines : []),
    ...otherLines,
  ].join("\n");
}
