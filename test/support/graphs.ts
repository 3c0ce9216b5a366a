/** Small graph builders for tests: YAML text in, validated Graph out. */
import { parseGraph } from "../../src/graph/load.ts";
import type { Graph } from "../../src/graph/model.ts";

export interface TaskSpec {
  id: string;
  deps?: string[];
  ws?: string;
  extra?: string;
}

export interface WorkstreamSpec {
  id: string;
  parent?: string;
  autoMerge?: boolean;
  extra?: string;
}

export function graphYaml(tasks: TaskSpec[], workstreams?: WorkstreamSpec[], head = ""): string {
  const lines = ["name: g", ...(head ? [head] : [])];
  if (workstreams) {
    lines.push("max_workstream_depth: 5", "workstreams:");
    for (const w of workstreams) {
      lines.push(`  - id: ${w.id}`);
      if (w.parent) lines.push(`    parent_workstream_id: ${w.parent}`);
      if (w.autoMerge) lines.push("    auto_merge: true");
      if (w.extra) lines.push(...w.extra.split("\n").map((l) => `    ${l}`));
    }
  }
  lines.push("tasks:");
  for (const t of tasks) {
    lines.push(
      `  - id: ${t.id}`,
      `    description: do ${t.id}`,
      `    dependencies: [${(t.deps ?? []).join(", ")}]`,
    );
    if (t.ws) lines.push(`    workstream_id: ${t.ws}`);
    if (t.extra) lines.push(...t.extra.split("\n").map((l) => `    ${l}`));
  }
  return `${lines.join("\n")}\n`;
}

export function graphOf(tasks: TaskSpec[], workstreams?: WorkstreamSpec[], head = ""): Graph {
  return parseGraph("test.yaml", graphYaml(tasks, workstreams, head));
}
