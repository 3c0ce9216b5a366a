/**
 * The status comment's picture of the run: a mermaid chart while its text stays readable (task by
 * task, or one node per workstream), else a compact table of the workstreams, one row each. Blocked
 * work is drawn grey and dashed; only a failure of its own outlines a node in red.
 */
import { rootCauses } from "../engine/blocking.ts";
import { count, STATUS_WORDS, WORKSTREAM_WORDS } from "../engine/progress.ts";
import type { RunState, TaskStatus } from "../engine/types.ts";
import { type Mark, type Marks, mermaidChart } from "../plan/mermaid.ts";
import type { Plan } from "../plan/plan.ts";
import { agentText, cell } from "./render.ts";

const TASK_MARK: Partial<Record<TaskStatus, Mark>> = {
  failed: "broken",
  cancelled: "broken",
  blocked: "blocked",
  running: "active",
  pr_open: "active",
};

/** A workstream's tasks counted by status, in the order of STATUS_WORDS. */
function tally(plan: Plan, state: RunState, ws: string): Map<TaskStatus, number> {
  const counts = new Map<TaskStatus, number>();
  for (const id of plan.tasksByWorkstream.get(ws) ?? [])
    counts.set(state.tasks[id]!.status, (counts.get(state.tasks[id]!.status) ?? 0) + 1);
  return new Map(
    (Object.keys(STATUS_WORDS) as TaskStatus[]).filter((s) => counts.has(s)).map((s) => [s, counts.get(s)!]),
  );
}

function marks(plan: Plan, state: RunState): { tasks: Marks; workstreams: Marks } {
  const roots = rootCauses(plan, state);
  const own = (ws: string) => {
    const root = roots.workstreams.get(ws);
    return !root || ("task" in root && plan.tasks.get(root.task)!.workstreamId === ws);
  };
  return {
    tasks: {
      label: (id) => STATUS_WORDS[state.tasks[id]!.status],
      mark: (id) => TASK_MARK[state.tasks[id]!.status] ?? null,
    },
    workstreams: {
      // Short, so that more fit side by side: "12/30 merged, 1 running".
      label: (ws) => {
        const counts = tally(plan, state, ws);
        const total = [...counts.values()].reduce((a, b) => a + b, 0);
        const done = (counts.get("merged") ?? 0) + (counts.get("completed") ?? 0);
        const first = [...counts].find(([s]) => s !== "merged" && s !== "completed" && s !== "pending");
        return `${done}/${total} done${first ? `, ${count(first[1])} ${STATUS_WORDS[first[0]]}` : ""}`;
      },
      mark: (ws) => {
        const status = state.workstreams[ws]!.status;
        if (status === "failed") return own(ws) ? "broken" : "blocked";
        return status === "active" || status === "pr_open" || status === "merge_ready" ? "active" : null;
      },
    },
  };
}

/** A workstream's state in words; one failed only because another's failure blocks it says "blocked". */
export function workstreamState(
  plan: Plan,
  state: RunState,
  wsId: string,
  roots = rootCauses(plan, state),
  max = 200,
): string {
  const ws = state.workstreams[wsId]!;
  const root = roots.workstreams.get(wsId);
  if (root && !("task" in root && plan.tasks.get(root.task)!.workstreamId === wsId))
    return `blocked by ${"task" in root ? `\`${root.task}\`` : `workstream \`${root.workstream}\``}`;
  const reason = ws.reason ? `: ${cell(agentText(ws.reason, max))}` : "";
  return `${WORKSTREAM_WORDS[ws.status]}${reason}`;
}

/** The workstreams as a table: what a chart could not show readably. */
function workstreamTable(plan: Plan, state: RunState): string[] {
  const roots = rootCauses(plan, state);
  return [
    "| Workstream | State | Done | Running or open | Failed | Blocked | To do |",
    "|---|---|---|---|---|---|---|",
    ...[...plan.workstreams.keys()].map((ws) => {
      const c = tally(plan, state, ws);
      const n = (...statuses: TaskStatus[]) => {
        const sum = statuses.reduce((a, s) => a + (c.get(s) ?? 0), 0);
        return sum ? count(sum) : "";
      };
      const total = (plan.tasksByWorkstream.get(ws) ?? []).length;
      return `| \`${ws}\` | ${workstreamState(plan, state, ws, roots, 80)} | ${n("merged", "completed") || 0} of ${count(total)} | ${n("running", "pr_open")} | ${n("failed", "cancelled")} | ${n("blocked")} | ${n("pending")} |`;
    }),
  ];
}

/** The chart (or table) section of the status comment, folded. */
export function workstreamChart(plan: Plan, state: RunState, graphLink?: string): string[] {
  const chart = mermaidChart(plan, marks(plan, state));
  const fullGraph = graphLink ? `[The graph file](${graphLink}) has every task.` : "";
  if (chart.text === null)
    return [
      "",
      `<details><summary>Workstreams (${count(plan.workstreams.size)}; too many to draw readably)</summary>`,
      "",
      ...workstreamTable(plan, state),
      ...(fullGraph ? ["", fullGraph] : []),
      "",
      "</details>",
    ];
  const title = chart.level === "tasks" ? "DAG" : "Workstreams (the graph is too large to draw task by task)";
  return [
    "",
    `<details><summary>${title}</summary>`,
    "",
    "```mermaid",
    chart.text,
    "```",
    ...(chart.level === "workstreams" && fullGraph ? ["", fullGraph] : []),
    "</details>",
  ];
}
