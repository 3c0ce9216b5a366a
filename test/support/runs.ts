/**
 * Runs at a given size and moment, for what people see: `workstreams` unconnected workstreams of
 * `perWorkstream` chained tasks, started, with a few tasks moved to the statuses a person must see.
 */
import { createEngine } from "../../src/engine/engine.ts";
import type { RunState, TaskStatus } from "../../src/engine/types.ts";
import { parseGraph } from "../../src/graph/load.ts";
import { buildPlan, type Plan } from "../../src/plan/plan.ts";

export function workstreamsGraph(workstreams: number, perWorkstream: number, name = "big"): string {
  const lines = [`name: ${name}`, "workstreams:"];
  for (let w = 0; w < workstreams; w++) lines.push(`  - id: ws_${w}`, "    auto_merge: true");
  lines.push("tasks:");
  for (let w = 0; w < workstreams; w++)
    for (let i = 0; i < perWorkstream; i++)
      lines.push(
        `  - id: w${w}_t${i}`,
        `    workstream_id: ws_${w}`,
        `    description: Implement part ${i} of module ${w}.`,
        ...(i > 0 ? [`    dependencies: [w${w}_t${i - 1}]`] : []),
      );
  return `${lines.join("\n")}\n`;
}

/** A run of the graph with `moments` applied: task id to the status (and reason) it is shown in. */
export function runAt(
  text: string,
  moments: Record<string, { status: TaskStatus; reason?: string; job?: string }>,
): { plan: Plan; state: RunState } {
  const graph = parseGraph("big.yaml", text, { limits: { maxBytes: 64 << 20 } });
  const state = createEngine(graph).start(0).state;
  for (const [id, m] of Object.entries(moments)) {
    const t = state.tasks[id]!;
    t.status = m.status;
    t.reason = m.reason ?? null;
    t.attempt = 1;
    t.attempts = [
      {
        n: 1,
        dispatchedAt: 0,
        deadline: 3_600_000,
        startedAt: 1_000,
        job: m.job ?? "4242",
        outcome: m.status === "failed" ? "failed" : null,
        reason: m.reason ?? null,
        costUsd: 0.5,
        turns: 4,
        pushedSha: null,
        gates: [],
      },
    ];
    if (m.status === "merged") t.mergedAt = 60_000;
  }
  return { plan: buildPlan(graph), state };
}
