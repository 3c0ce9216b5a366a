/**
 * What people read on GitHub, as pure functions of the plan and the run state: the run status
 * comment, task and integration PR bodies, the plan comment and check-run outputs. Text an agent
 * wrote (summaries, concerns) is redacted and kept inside markdown that cannot run anything.
 */
import { redactor } from "../attempt/redact.ts";
import { type GraphIssue, printable } from "../graph/errors.ts";
import { integrationBranch, taskBranch, type Task } from "../graph/model.ts";
import { mermaidDag } from "../plan/mermaid.ts";
import type { Plan } from "../plan/plan.ts";
import type { RunState, TaskRun } from "../engine/types.ts";

/** GitHub refuses comment and check-run bodies over 65,536 characters. */
export const BODY_LIMIT = 65_536;
const scrub = redactor([]);

/**
 * Agent text inside markdown: secrets masked, HTML comments and fences neutralised, @-mentions kept
 * from notifying anyone (a zero-width space after the @), length bounded.
 */
export function agentText(text: string, max = 4000): string {
  const clean = scrub(text)
    .replace(/<!--|-->/g, "")
    .replace(/```/g, "ʼʼʼ")
    .replace(/@(?=[A-Za-z0-9])/g, "@\u200b");
  return clean.length > max ? `${clean.slice(0, max)} …` : clean;
}

export const statusMarker = (runKey: string): string => `<!-- agentrelay:status run=${runKey} -->`;
export const PLAN_MARKER = "<!-- agentrelay:plan -->";

const duration = (ms: number): string => {
  const s = Math.max(0, Math.round(ms / 1000));
  return s < 60
    ? `${s}s`
    : s < 3600
      ? `${Math.floor(s / 60)}m${s % 60}s`
      : `${Math.floor(s / 3600)}h${Math.floor((s % 3600) / 60)}m`;
};

export const taskCost = (t: TaskRun): number => t.attempts.reduce((sum, a) => sum + (a.costUsd ?? 0), 0);

function taskRow(id: string, ws: string, t: TaskRun, now: number): string {
  const first = t.attempts[0];
  const end = t.mergedAt ?? (t.status === "running" || t.status === "pr_open" ? now : null);
  const time = first && end ? duration(end - (first.startedAt ?? first.dispatchedAt)) : "";
  const cost = taskCost(t);
  const pr = t.pr ? `[#${t.pr.number}](${t.pr.url})` : "";
  const concerns = t.concerns.length + t.opsConcerns.length;
  const status =
    t.reason && (t.status === "failed" || t.status === "blocked")
      ? `${t.status}: ${agentText(t.reason, 120).replace(/\|/g, "\\|").replace(/\n/g, " ")}`
      : t.status;
  return `| \`${id}\` | ${ws} | ${status} | ${t.attempt || ""} | ${pr} | ${time} | ${cost ? `$${cost.toFixed(2)}` : ""} | ${concerns || ""} |`;
}

export function runHeadline(state: RunState): string {
  const counts = new Map<string, number>();
  for (const t of Object.values(state.tasks)) counts.set(t.status, (counts.get(t.status) ?? 0) + 1);
  const parts = [...counts].map(([s, n]) => `${n} ${s}`).join(", ");
  return `${state.outcome ? state.outcome.replace(/_/g, " ") : state.cancelled ? "cancelling" : "running"} (${parts})`;
}

/** The run status comment: one table row per task and the DAG with statuses, within GitHub's limit. */
export function statusComment(
  plan: Plan,
  state: RunState,
  now: number,
  links: { trackingIssue?: number | null } = {},
): string {
  const head = [
    statusMarker(state.runKey),
    `### agentrelay run \`${state.runKey}\`: ${runHeadline(state)}`,
    "",
    ...(links.trackingIssue
      ? [
          `Tracking issue #${links.trackingIssue}. Commands: \`/agentrelay status\`, \`retry TASK\`, \`cancel [TASK]\`, \`reset TASK\`.`,
          "",
        ]
      : []),
    "| Task | Workstream | Status | Attempt | PR | Duration | Cost | Concerns |",
    "|---|---|---|---|---|---|---|---|",
  ].join("\n");
  const dag = [
    "",
    "<details><summary>DAG</summary>",
    "",
    "```mermaid",
    mermaidDag(plan, (id) => state.tasks[id]?.status ?? ""),
    "```",
    "</details>",
  ].join("\n");
  const rows: string[] = [];
  let size = head.length;
  const budget = BODY_LIMIT - 200;
  for (const [i, id] of plan.order.entries()) {
    const row = taskRow(id, plan.tasks.get(id)!.workstreamId, state.tasks[id]!, now);
    if (size + row.length + 1 > budget) {
      rows.push(
        `\n… and ${plan.order.length - i} more tasks (the full state is on the \`agentrelay-state/${state.graph}\` branch).`,
      );
      break;
    }
    rows.push(row);
    size += row.length + 1;
  }
  const body = `${head}\n${rows.join("\n")}`;
  return body.length + dag.length <= BODY_LIMIT ? body + dag : body;
}

function describe(task: Task): string {
  if (!task.description) return `${task.id} (${task.role.replace(/_/g, " ")})`;
  return task.description.length > 200 ? `${task.description.slice(0, 200)} …` : task.description;
}

export function taskPrTitle(task: Task): string {
  const first = (task.description ?? task.role.replace(/_/g, " ")).split("\n")[0]!.trim();
  return `agentrelay: ${task.id}: ${first.length > 80 ? `${first.slice(0, 80)}…` : first}`;
}

export function taskPrBody(
  plan: Plan,
  state: RunState,
  taskId: string,
  jobUrl: (job: string) => string = () => "",
): string {
  const task = plan.tasks.get(taskId)!;
  const t = state.tasks[taskId]!;
  const job = t.attempts[t.attempt - 1]?.job;
  const ranIn = job ? ` ([its job](${jobUrl(job)}))` : "";
  const lines = [
    `<!-- agentrelay:task run=${state.runKey} task=${taskId} -->`,
    `Task \`${taskId}\` of run \`${state.runKey}\`, workstream \`${task.workstreamId}\`, attempt ${t.attempt}${ranIn}.`,
    "",
    `> ${describe(task).replace(/\n/g, "\n> ")}`,
    "",
    "## Summary",
    t.summary ? agentText(t.summary) : "_The agent left no summary._",
  ];
  if (t.concerns.length) lines.push("", "## Concerns", ...t.concerns.map((c) => `- ${agentText(c, 500)}`));
  if (t.opsConcerns.length)
    lines.push("", "## Ops Concerns", ...t.opsConcerns.map((c) => `- ${agentText(c, 500)}`));
  if (t.outputs.length)
    lines.push(
      "",
      "## Outputs",
      ...t.outputs.map((o) => `- \`${agentText(o.path, 200)}\` (${o.action}, ${o.category})`),
    );
  return lines.join("\n");
}

/** agentrelay's integration PR body: summary line, tasks with their PRs and summaries, concerns. */
export function integrationPrBody(plan: Plan, state: RunState, workstream: string): string {
  const ws = plan.workstreams.get(workstream)!;
  const ids = plan.tasksByWorkstream.get(workstream) ?? [];
  const lines = [
    `<!-- agentrelay:integration run=${state.runKey} workstream=${workstream} -->`,
    "## Summary",
    `Integrates workstream \`${workstream}\` (\`${integrationBranch(state.graph, workstream)}\`) into \`${ws.mergeTargetBranch}\`.`,
    "",
    "## Tasks",
  ];
  for (const id of ids) {
    const t = state.tasks[id]!;
    lines.push(`- **${id}**: ${describe(plan.tasks.get(id)!)}${t.pr ? ` (${t.pr.url})` : " (no PR)"}`);
    if (t.summary)
      lines.push(
        `  <details><summary>Summary</summary>\n\n  ${agentText(t.summary).replace(/\n/g, "\n  ")}\n\n  </details>`,
      );
  }
  for (const [title, pick] of [
    ["Concerns", (t: TaskRun) => t.concerns],
    ["Ops Concerns", (t: TaskRun) => t.opsConcerns],
  ] as const) {
    const withAny = ids.filter((id) => pick(state.tasks[id]!).length > 0);
    if (withAny.length === 0) continue;
    lines.push("", `## ${title}`);
    for (const id of withAny)
      lines.push(`### ${id}`, ...pick(state.tasks[id]!).map((c) => `- ${agentText(c, 500)}`));
  }
  return lines.join("\n");
}

export const integrationPrTitle = (workstream: string): string => `Integrate workstream ${workstream}`;

/** The plan comment and check-run summary of a graph file. */
export function planSummary(plan: Plan): string {
  const { graph } = plan;
  const lines = [
    `**${graph.name}** (${graph.dialect}): ${graph.tasks.length} tasks in ${graph.workstreams.length} workstreams, ${plan.waves.length} waves.`,
    "",
    "```mermaid",
    mermaidDag(plan),
    "```",
    "",
    "| Workstream | Integration branch | From | Into | Auto-merge | Tasks |",
    "|---|---|---|---|---|---|",
    ...graph.workstreams.map(
      (w) =>
        `| \`${w.id}\` | \`${integrationBranch(graph.name, w.id)}\` | \`${w.baseBranch}\` | \`${w.mergeTargetBranch}\` | ${w.autoMerge ? "yes" : "no"} | ${(plan.tasksByWorkstream.get(w.id) ?? []).length} |`,
    ),
    "",
    "**Waves**",
    ...plan.waves.slice(0, 50).map((wave, i) => `${i + 1}. ${wave.map((id) => `\`${id}\``).join(", ")}`),
    ...(plan.waves.length > 50 ? [`… ${plan.waves.length - 50} more waves`] : []),
    "",
    `**Dispatched first**: ${plan.waves[0]?.map((id) => `\`${id}\` → \`${taskBranch(graph.name, id)}\``).join(", ") ?? "nothing"}`,
  ];
  const text = lines.join("\n");
  return text.length > BODY_LIMIT - 2000
    ? text.replace(/```mermaid[\s\S]*?```\n/, "_(the DAG is too large to draw here)_\n")
    : text;
}

export interface Annotation {
  path: string;
  start_line: number;
  end_line: number;
  start_column?: number;
  end_column?: number;
  annotation_level: "failure";
  title: string;
  message: string;
}

/** Validation issues as check-run annotations (GitHub takes at most 50 per request). */
export function annotations(issues: GraphIssue[]): Annotation[] {
  return issues.slice(0, 50).map((issue) => ({
    path: issue.file,
    start_line: issue.line,
    end_line: issue.line,
    ...(issue.line > 0 ? { start_column: issue.column, end_column: issue.column } : {}),
    annotation_level: "failure",
    title: printable(issue.path) || "graph",
    message: printable(issue.message),
  }));
}
