/**
 * Mermaid flowcharts of a plan, coloured by workstream (and, when statuses are given, marked by
 * status). GitHub renders them in comments and check-run summaries.
 */
import type { Plan } from "./plan.ts";

const PALETTE = ["#dbeafe", "#dcfce7", "#fef9c3", "#fce7f3", "#ede9fe", "#ffedd5", "#cffafe", "#f1f5f9"];

const escapeLabel = (text: string): string => text.replace(/["<>]/g, (c) => `#${c.charCodeAt(0)};`);

export function mermaidDag(plan: Plan, status?: (taskId: string) => string): string {
  const node = new Map(plan.order.map((id, i) => [id, `t${i}`]));
  const wsIds = [...plan.workstreams.keys()];
  const lines = ["flowchart TD"];
  wsIds.forEach((_, i) => {
    lines.push(`  classDef ws${i} fill:${PALETTE[i % PALETTE.length]},stroke:#475569,color:#0f172a`);
  });
  lines.push(
    "  classDef failed stroke:#dc2626,stroke-width:3px",
    "  classDef active stroke:#2563eb,stroke-width:3px",
  );
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
