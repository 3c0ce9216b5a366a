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
import { type Breakage, count, plural, standing, STATUS_WORDS, statusCounts } from "../engine/progress.ts";
import { rootCauses } from "../engine/blocking.ts";
import { leftToPerson, resolving } from "../engine/conflicts.ts";
import type { RunState, TaskRun } from "../engine/types.ts";
import type { Plan } from "../plan/plan.ts";
import { type ResolutionSubject, resolverOf } from "../plan/resolution.ts";
import { agentText, BODY_LIMIT, cell, duration, statusMarker, takeLines } from "./render.ts";
import { workstreamChart, workstreamState } from "./workstream-chart.ts";

export interface StatusLinks {
  trackingIssue?: number | null;
  /** The page of an attempt's Actions run. */
  job?: (job: string) => string;
  /** The graph file at the run's commit: the full graph, when the chart is drawn by workstream. */
  graph?: string;
  /** What the orchestrator cannot do where it runs, and how to fix it (one line, shown under the commands). */
  notice?: string;
}

/** Rows shown under their workstream in "Needs attention": what holds a workstream now. */
const ACTIVE = new Set<TaskRun["status"]>(["running", "pr_open"]);
/** How many items a line of the "waiting for" list names before it counts the rest. */
const NAMED = 5;

/** "`a`, `b`, `c`, `d`, `e` and 3 more". */
export const named = (ids: string[], show: (id: string) => string, max = NAMED, separator = ", "): string =>
  ids.slice(0, max).map(show).join(separator) +
  (ids.length > max ? `${separator.trim() === ";" ? ";" : ""} and ${count(ids.length - max)} more` : "");

const link = (pr: { number: number; url: string } | null) => (pr ? `[#${pr.number}](${pr.url})` : "its PR");

/** The headline: the run's state, then its tasks counted by status. */
export function runHeadline(plan: Plan, state: RunState): string {
  return `${standing(plan, state).phase} (${statusCounts(state)})`;
}

/** A root failure by name: "`t12`", "workstream `w`". */
const breakageName = (b: Breakage) =>
  "task" in b.root ? `\`${b.root.task}\`` : `workstream \`${b.root.workstream}\``;

/** What a root failure is, in a line: "`t12` failed (tests failed)", "workstream `w` failed (…)". */
const breakageText = (b: Breakage, max = 160) => {
  const what = `${breakageName(b)} ${b.text.endsWith("was cancelled") ? "was cancelled" : "failed"}`;
  return b.reason ? `${what} (${agentText(b.reason, max)})` : what;
};

/** What the run waits for, and who must act: a person first, then GitHub (jobs, checks). */
export function waitingFor(plan: Plan, state: RunState, links: StatusLinks = {}): string[] {
  const lines: string[] = [];
  const now = standing(plan, state);
  const jobLink = (name: string, job: string | null | undefined) =>
    job && links.job ? `[${name}](${links.job(job)})` : name;
  if (!state.cancelled) {
    for (const hold of now.budget.slice(0, NAMED))
      lines.push(
        `- **Waiting for you**: ${hold.message}; ${plural(hold.tasks.length, "task")} ${hold.tasks.length === 1 ? "waits" : "wait"} for it. \`/agentrelay budget +USD [WORKSTREAM|TASK]\` raises it and goes on.`,
      );
    const blocked = now.breakages.reduce((n, b) => n + b.blocked.length, 0);
    if (now.breakages.length > 0) {
      // One failure with its reason; several by name, the most blocking first (the table has why).
      const one = now.breakages.length === 1;
      const list = named(
        now.breakages.map((b) => {
          const blocks = b.blocked.length ? `blocking ${count(b.blocked.length)}` : "";
          return one
            ? `${breakageText(b, 160)}${blocks ? `, ${blocks}` : ""}`
            : `${breakageName(b)}${blocks ? ` (${blocks})` : ""}`;
        }),
        (line) => line,
      );
      const lead = blocked
        ? `${plural(blocked, "task")} blocked by ${plural(now.breakages.length, "failure")}: `
        : "";
      lines.push(
        `- **Waiting for you**: ${lead}${list}${one ? "" : " (why: under Needs attention)"}. \`/agentrelay retry TASK\` runs a failed task again (what it blocks goes on once it merges).`,
      );
    }
  }
  const conflicted = plan.order.filter((id) => leftToPerson(state.tasks[id]!));
  for (const id of conflicted.slice(0, NAMED))
    lines.push(
      `- **Waiting for you**: ${link(state.tasks[id]!.pr)} (\`${id}\`) ${agentText(state.tasks[id]!.reason ?? "has conflicts", 300)}.`,
    );
  if (conflicted.length > NAMED)
    lines.push(
      `- **Waiting for you**: ${count(conflicted.length - NAMED)} more task PRs with conflicts (below).`,
    );
  for (const [wsId, ws] of Object.entries(state.workstreams)) {
    if (ws.status !== "pr_open" || resolving(ws.conflict)) continue;
    const def = plan.workstreams.get(wsId)!;
    const merge = `merge ${link(ws.pr)} (\`${wsId}\` into \`${def.mergeTargetBranch}\`)`;
    if (def.autoMerge && !ws.autoMergeSkipped) continue;
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
  if (now.unexplained.length > 0)
    lines.push(
      `- ${plural(now.unexplained.length, "task")} blocked: ${named(now.unexplained, (id) => `\`${id}\` (${agentText(state.tasks[id]!.reason ?? "", 120)})`)}.`,
    );
  // What moves on its own: resolutions, jobs, PRs GitHub merges.
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
      `- Resolving conflicts (an agent merges, then the PR merges again): ${resolutions.slice(0, NAMED).join("; ")}${resolutions.length > NAMED ? ` and ${count(resolutions.length - NAMED)} more` : ""}.`,
    );
  const running = plan.order.filter((id) => state.tasks[id]!.status === "running");
  if (running.length > 0)
    lines.push(
      `- Waiting for ${plural(running.length, "job")}: ${named(running, (id) => {
        const job = state.tasks[id]!.attempts.at(-1)?.job;
        return job && links.job ? `[\`${id}\`](${links.job(job)})` : `\`${id}\``;
      })}.`,
    );
  const merging = plan.order.filter((id) => {
    const t = state.tasks[id]!;
    return t.status === "pr_open" && !resolving(t.conflict) && !leftToPerson(t);
  });
  const opening = merging.filter((id) => state.tasks[id]!.pr === null);
  const open = merging.filter((id) => state.tasks[id]!.pr !== null);
  if (opening.length > 0)
    lines.push(`- Opening ${plural(opening.length, "task PR")}: ${named(opening, (id) => `\`${id}\``)}.`);
  if (open.length > 0)
    lines.push(
      `- Waiting for ${plural(open.length, "task PR")} to merge (required checks or reviews): ${named(open, (id) => link(state.tasks[id]!.pr))}.`,
    );
  for (const [wsId, ws] of Object.entries(state.workstreams)) {
    const def = plan.workstreams.get(wsId)!;
    if (ws.status === "pr_open" && !resolving(ws.conflict) && def.autoMerge && !ws.autoMergeSkipped)
      lines.push(`- Waiting for GitHub: ${link(ws.pr)} merges itself once its required checks pass.`);
  }
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
  const words =
    t.status === "pr_open" && t.pr === null && !leftToPerson(t) ? "opening its PR" : STATUS_WORDS[t.status];
  const status =
    t.status === "pr_open" && resolving(t.conflict)
      ? "resolving conflicts"
      : t.reason && (t.status === "failed" || t.status === "blocked" || leftToPerson(t))
        ? `${words}: ${cell(agentText(t.reason, 120))}`
        : words;
  const concerns = t.concerns.length + t.opsConcerns.length;
  return `| \`${id}\` |${workstream ? ` ${workstream} |` : ""} ${status} | ${attempt} | ${pr} | ${time} | ${cost ? usd(cost) : ""} | ${concerns || ""} |`;
}

/** The failures, the most blocking first, with what each blocks. */
function failureLines(plan: Plan, state: RunState, breakages: Breakage[]): string[] {
  if (breakages.length === 0) return [];
  const blocked = breakages.reduce((n, b) => n + b.blocked.length, 0);
  const lines = [
    "",
    `**Failures** (${count(breakages.length)}${blocked ? `, blocking ${plural(blocked, "task")}` : ""})`,
    "",
    "| What broke | Workstream | Why | Blocks |",
    "|---|---|---|---|",
  ];
  for (const b of breakages) {
    const what = "task" in b.root ? `\`${b.root.task}\`` : `workstream \`${b.root.workstream}\``;
    const ws = "task" in b.root ? plan.tasks.get(b.root.task)!.workstreamId : b.root.workstream;
    const status = "task" in b.root ? STATUS_WORDS[state.tasks[b.root.task]!.status] : "failed";
    const why = cell(agentText(b.reason ?? status, 160));
    const across = new Set(b.blocked.map((id) => plan.tasks.get(id)!.workstreamId)).size;
    const blocks = b.blocked.length
      ? `${plural(b.blocked.length, "task")}${across > 1 ? ` in ${count(across)} workstreams` : ""}`
      : "";
    lines.push(`| ${what} | ${ws} | ${status === "failed" ? why : `${status}: ${why}`} | ${blocks} |`);
  }
  return lines;
}

/** The running and open rows, one table per workstream, under the workstream's own state. */
function activeLines(plan: Plan, state: RunState, now: number, links: StatusLinks): string[] {
  const lines: string[] = [];
  const roots = rootCauses(plan, state);
  for (const [wsId, ids] of plan.tasksByWorkstream) {
    const rows = ids.filter((id) => ACTIVE.has(state.tasks[id]!.status));
    if (rows.length === 0) continue;
    lines.push("", `**\`${wsId}\`** (${workstreamState(plan, state, wsId, roots)})`, "", ...tableHead(false));
    for (const id of rows) lines.push(taskRow(id, state.tasks[id]!, now, links));
  }
  return lines;
}

/** The blocked tasks, by what blocks them, each group's tasks named up to a line's worth. */
function blockedLines(breakages: Breakage[]): string[] {
  const groups = breakages.filter((b) => b.blocked.length > 0);
  if (groups.length === 0) return [];
  const total = groups.reduce((n, b) => n + b.blocked.length, 0);
  return [
    "",
    `<details><summary>Blocked tasks (${count(total)}), by what blocks them</summary>`,
    "",
    ...groups.map(
      (b) =>
        `- ${plural(b.blocked.length, "task")} blocked by ${breakageText(b, 80)}: ${named(b.blocked, (id) => `\`${id}\``, 40)}`,
    ),
    "",
    "</details>",
  ];
}

/** Status order of the "Other tasks" table: what is still to come first, what is done last. */
const OTHER_ORDER: TaskRun["status"][] = ["pending", "cancelled", "merged", "completed"];

export function statusComment(plan: Plan, state: RunState, now: number, links: StatusLinks = {}): string {
  const waits = waitingFor(plan, state, links);
  const { breakages } = standing(plan, state);
  const head = [
    statusMarker(state.runKey),
    `### agentrelay run \`${state.runKey}\`: ${runHeadline(plan, state)}`,
    ...(waits.length ? ["", ...waits] : []),
    ...(state.budget || plan.graph.settings.maxCostMicros !== null
      ? ["", `${spendLine(state, plan.graph)}.`]
      : []),
    "",
    links.trackingIssue
      ? `Tracking issue #${links.trackingIssue}. Commands: \`/agentrelay status\`, \`retry TASK\`, \`cancel [TASK]\`, \`reset TASK\`, \`budget +USD\`.`
      : "Commands: `/agentrelay status`, `retry TASK`, `cancel [TASK]`, `reset TASK`, `budget +USD`.",
    ...(links.notice ? ["", `> [!NOTE]`, `> ${links.notice}`] : []),
  ];
  const stateBranch = `the full state is on the \`agentrelay-state/${state.graph}\` branch`;
  let budget = BODY_LIMIT - 500 - head.join("\n").length;

  const attention = [...failureLines(plan, state, breakages), ...activeLines(plan, state, now, links)];
  const attentionShown = takeLines(
    attention,
    budget / 2,
    (n) => `\n… ${count(n)} more lines that need attention (${stateBranch}).`,
  );
  budget -= attentionShown.join("\n").length;

  const chartLines = workstreamChart(plan, state, links.graph);
  const chartFits = chartLines.join("\n").length < budget / 3;
  if (chartFits) budget -= chartLines.join("\n").length;

  const blocked = takeLines(blockedLines(breakages), budget / 3, (n) => `\n… and ${count(n)} more groups.`);
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
  const otherLines = others.length
    ? [
        "",
        `<details><summary>${attention.length ? "Other tasks" : "Tasks"} (${count(others.length)})</summary>`,
        "",
        ...tableHead(true),
        ...takeLines(
          others.map((id) => taskRow(id, state.tasks[id]!, now, links, plan.tasks.get(id)!.workstreamId)),
          budget - 200,
          left,
        ),
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
