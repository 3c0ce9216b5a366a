/**
 * Mermaid flowcharts of a plan, coloured by workstream (and, when statuses are given, marked by
 * status). GitHub renders them in comments and check-run summaries, within limits: mermaid refuses a
 * chart of more than 500 edges, and long before that a task-level chart is taller than any page (ten
 * unconnected workstreams of 30 tasks draw as a 62,000-pixel strip). Past a size the chart is drawn
 * one node per workstream, and past that not at all.
 */
import type { Plan } from "./plan.ts";

const PALETTE = ["#dbeafe", "#dcfce7", "#fef9c3", "#fce7f3", "#ede9fe", "#ffedd5", "#cffafe", "#f1f5f9"];

const escapeLabel = (text: string): string => text.replace(/["<>#]/g, (c) => `#${c.charCodeAt(0)};`);

/** The largest charts drawn at each level; both stay far below mermaid's 500 edges. */
export const CHART_LIMITS = {
  tasks: { nodes: 60, edges: 150, depth: 15 },
  workstreams: { nodes: 60, edges: 150 },
} as const;

export type ChartLevel = "tasks" | "workstreams" | "none";

const STYLES = [
  "  classDef failed stroke:#dc2626,stroke-width:3px",
  "  classDef active stroke:#2563eb,stroke-width:3px",
];

const colours = (plan: Plan) =>
  [...plan.workstreams.keys()].map(
    (_, i) => `  classDef ws${i} fill:${PALETTE[i % PALETTE.length]},stroke:#475569,color:#0f172a`,
  );

/** One node per task, grouped in a subgraph per workstream. */
export function mermaidDag(plan: Plan, status?: (taskId: string) => string): string {
  const node = new Map(plan.order.map((id, i) => [id, `t${i}`]));
  const wsIds = [...plan.workstreams.keys()];
  const lines = ["flowchart TD", ...colours(plan), ...STYLES];
  for (const [ws, ids] of plan.tasksByWorkstream) {
    if (ids.length === 0) continue;
    lines.push(`  subgraph workstream_${wsIds.indexOf(ws)}["${escapeLabel(ws)}"]`);
    for (const id of ids) {
      const state = status?.(id);
      const label = escapeLabel(id) + (state ? `<br/><i>${escapeLabel(state)}</i>` : "");
      lines.push(`    ${node.get(id)}["${label}"]:::ws${wsIds.indexOf(ws)}`);
    }
    lines.push("  end");
  }
  for (const id of plan.order) {
    for (const dep of plan.tasks.get(id)!.dependencies) lines.push(`  ${node.get(dep)} --> ${node.get(id)}`);
  }
  if (status) {
    for (const id of plan.order) {
      const s = status(id);
      if (s === "failed" || s === "blocked") lines.push(`  class ${node.get(id)} failed`);
      else if (s === "running" || s === "pr_open") lines.push(`  class ${node.get(id)} active`);
    }
  }
  return lines.join("\n");
}

/** Edges between workstreams: a child from its parent (dotted), a dependency across workstreams. */
function workstreamEdges(plan: Plan): { from: string; to: string; parent: boolean }[] {
  const seen = new Set<string>();
  const edges: { from: string; to: string; parent: boolean }[] = [];
  for (const ws of plan.graph.workstreams) {
    if (ws.parentId) edges.push({ from: ws.parentId, to: ws.id, parent: true });
    seen.add(`${ws.parentId}>${ws.id}`);
  }
  for (const id of plan.order) {
    const to = plan.tasks.get(id)!.workstreamId;
    for (const dep of plan.tasks.get(id)!.dependencies) {
      const from = plan.tasks.get(dep)!.workstreamId;
      if (from === to || seen.has(`${from}>${to}`)) continue;
      seen.add(`${from}>${to}`);
      edges.push({ from, to, parent: false });
    }
  }
  return edges;
}

/** One node per workstream, labelled with its task count (or its tasks' statuses). */
export function mermaidWorkstreams(plan: Plan, status?: (taskId: string) => string): string {
  const wsIds = [...plan.workstreams.keys()];
  const lines = ["flowchart TD", ...colours(plan), ...STYLES];
  for (const [i, ws] of wsIds.entries()) {
    const ids = plan.tasksByWorkstream.get(ws) ?? [];
    const counts = new Map<string, number>();
    for (const id of ids) {
      const s = status?.(id) ?? "";
      counts.set(s, (counts.get(s) ?? 0) + 1);
    }
    const detail = status
      ? [...counts].map(([s, n]) => `${n} ${s}`).join(", ")
      : `${ids.length} task${ids.length === 1 ? "" : "s"}`;
    lines.push(`  w${i}["${escapeLabel(ws)}<br/><i>${escapeLabel(detail)}</i>"]:::ws${i}`);
    if (counts.has("failed") || counts.has("blocked")) lines.push(`  class w${i} failed`);
    else if (counts.has("running") || counts.has("pr_open")) lines.push(`  class w${i} active`);
  }
  for (const e of workstreamEdges(plan))
    lines.push(`  w${wsIds.indexOf(e.from)} ${e.parent ? "-.->" : "-->"} w${wsIds.indexOf(e.to)}`);
  return lines.join("\n");
}

/** The level a plan is drawn at on GitHub: its tasks, its workstreams, or none (too large to read). */
export function chartLevel(plan: Plan): ChartLevel {
  const edges = plan.graph.tasks.reduce((n, t) => n + t.dependencies.length, 0);
  const t = CHART_LIMITS.tasks;
  if (plan.order.length <= t.nodes && edges <= t.edges && plan.waves.length <= t.depth) return "tasks";
  const w = CHART_LIMITS.workstreams;
  if (plan.workstreams.size <= w.nodes && workstreamEdges(plan).length <= w.edges) return "workstreams";
  return "none";
}

/** The chart GitHub is shown, at the level that fits; null when even the workstreams are too many. */
export function mermaidChart(
  plan: Plan,
  status?: (taskId: string) => string,
): { level: ChartLevel; text: string | null } {
  const level = chartLevel(plan);
  if (level === "tasks") return { level, text: mermaidDag(plan, status) };
  if (level === "workstreams") return { level, text: mermaidWorkstreams(plan, status) };
  return { level, text: null };
}
