import { budgetsText } from "../../engine/budget.ts";
import { readGraphFile } from "../../graph/read.ts";
import { count, integrationBranch, repositoryFullName } from "../../graph/model.ts";
import { mermaidDag } from "../../plan/mermaid.ts";
import { overlapLines, overlapsOf } from "../../plan/overlaps.ts";
import { buildPlan } from "../../plan/plan.ts";
import { unitGatesNote } from "../../plan/resolution.ts";
import type { Plan } from "../../plan/model.ts";
import type { Io } from "../io.ts";

export function planJson(plan: Plan): object {
  return {
    name: plan.graph.name,
    dialect: plan.graph.dialect,
    order: plan.order,
    waves: plan.waves,
    workstreams: plan.graph.workstreams.map((w) => ({
      id: w.id,
      ...(w.repository !== undefined && {
        repository: { name: w.repository, full_name: repositoryFullName(plan.graph, w.repository) },
      }),
      tasks: plan.tasksByWorkstream.get(w.id) ?? [],
    })),
    overlaps: overlapsOf(plan),
  };
}

export function planText(plan: Plan): string {
  const { graph } = plan;
  const lines = [
    `Graph ${graph.name} (${graph.dialect}, ${count(graph.tasks.length, "task")}, ${count(graph.workstreams.length, "workstream")})`,
    "",
  ];
  lines.push("Order:");
  for (const [i, id] of plan.order.entries())
    lines.push(`  ${i + 1}. ${id}  [${plan.tasks.get(id)!.workstreamId}]`);
  lines.push(
    "",
    "Waves (what could run together, ignoring capacity and that a workstream runs one task at a time):",
  );
  for (const [i, wave] of plan.waves.entries()) lines.push(`  ${i + 1}: ${wave.join(", ")}`);
  lines.push("", "Workstreams:");
  for (const ws of graph.workstreams) {
    const parent = ws.parentId ? `, child of ${ws.parentId}` : "";
    const where =
      ws.repository === undefined
        ? ""
        : ` in ${repositoryFullName(graph, ws.repository)} (${ws.repository}):`;
    lines.push(
      `  ${ws.id}:${where} ${integrationBranch(graph.name, ws.id)} from ${ws.baseBranch} into ${ws.mergeTargetBranch}` +
        `${ws.autoMerge ? ", auto-merge" : ""}${parent}`,
    );
    lines.push(`    tasks: ${(plan.tasksByWorkstream.get(ws.id) ?? []).join(", ")}`);
  }
  const overlaps = overlapsOf(plan);
  if (overlaps.length > 0)
    lines.push(
      "",
      `Overlaps (tasks of different workstreams that may run at once and change the same paths${graph.settings.overlaps === "serialize" ? "" : "; `overlaps: serialize` orders them"}):`,
      ...overlapLines(overlaps, 50).map((line) => `  ${line}`),
    );
  const unitOnly = unitGatesNote(plan);
  if (unitOnly) lines.push("", `Whole-tree check: ${unitOnly}.`);
  const s = graph.settings;
  lines.push("", `Settings: max_concurrency ${s.maxConcurrency}, max_task_attempts ${s.maxTaskAttempts}`);
  const budgets = budgetsText(graph, 20, (id) => id);
  if (budgets) lines.push(budgets);
  if (graph.cyberian?.params.length) {
    lines.push("", "Params:");
    for (const p of graph.cyberian.params)
      lines.push(`  ${p.name} (${p.range}${p.required ? ", required" : ""})`);
  }
  lines.push("", "```mermaid", mermaidDag(plan), "```");
  return lines.join("\n");
}

/** `agentrelay plan FILE [--json]`. */
export async function planCommand(file: string, json: boolean, io: Io): Promise<number> {
  const plan = buildPlan(await readGraphFile(file));
  io.out(json ? JSON.stringify(planJson(plan)) : planText(plan));
  return 0;
}
