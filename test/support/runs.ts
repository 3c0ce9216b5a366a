/**
 * Runs at a given size and moment, for what people see: `workstreams` unconnected workstreams of
 * `perWorkstream` chained tasks, started, with a few tasks moved to the statuses a person must see.
 */
import { createEngine } from "../../src/engine/engine.ts";
import type { RunState, TaskStatus } from "../../src/engine/types.ts";
import { parseGraph } from "../../src/graph/load.ts";
import type { Plan } from "../../src/plan/model.ts";
import { buildPlan } from "../../src/plan/plan.ts";

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
  const plan = buildPlan(graph);
  for (const [id, m] of Object.entries(moments)) {
    const t = state.tasks[id]!;
    // A task that started had its workstream's branch prepared.
    state.workstreams[plan.tasks.get(id)!.workstreamId]!.preparation = "done";
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
        costMicros: 500_000,
        turns: 4,
        pushedSha: null,
        gates: [],
      },
    ];
    if (m.status === "merged") t.mergedAt = 60_000;
  }
  return { plan, state };
}

/**
 * Where task `i` of a scale graph goes: the first workstream holds a few tasks (it finishes early and
 * its integration PR waits for a person), the others share the rest.
 */
function scaleLayout(tasks: number, workstreams: number) {
  const head = Math.max(1, Math.min(3, Math.floor(tasks / workstreams / 2)));
  const per = Math.max(1, Math.floor((tasks - head) / Math.max(1, workstreams - 1)));
  const wsOf = (i: number) => (i < head ? 0 : Math.min(workstreams - 1, 1 + Math.floor((i - head) / per)));
  const firstOf = (w: number) => (w === 0 ? 0 : head + (w - 1) * per);
  return { per, wsOf, firstOf };
}

/**
 * A graph shaped for runs at scale: `workstreams` workstreams sharing `tasks` tasks, each a chain;
 * every third workstream from the fifth starts from the end of the one before it (so a failure there
 * blocks a workstream beyond its own); the first leaves conflicts to a person; the run has a budget. With
 * `scaleWorld`, what a run of it meets.
 */
/**
 * With `verify`, each integration PR is verified before it lands (an `integration_gate`), and one
 * workstream in eight (`ws_8`, `ws_16`, …) does not auto-merge.
 */
export function scaleGraph(
  tasks: number,
  workstreams: number,
  budgetUsd: number,
  autoMerge = true,
  verify = false,
): string {
  const { wsOf, firstOf } = scaleLayout(tasks, workstreams);
  const lines = [
    `name: scale-${tasks}`,
    "max_concurrency: 8",
    "max_task_attempts: 2",
    `max_cost_usd: ${budgetUsd}`,
    "workstreams:",
  ];
  for (let w = 0; w < workstreams; w++)
    lines.push(
      `  - id: ws_${w}`,
      `    auto_merge: ${autoMerge && !(verify && w > 0 && w % 8 === 0)}`,
      ...(w === 0 ? ["    max_resolution_attempts: 0"] : []),
      ...(verify ? ["    integration_gate: make test"] : []),
    );
  lines.push("tasks:");
  for (let i = 0; i < tasks; i++) {
    const w = wsOf(i);
    const first = i === firstOf(w);
    const deps = !first || (w % 3 === 2 && w >= 5) ? [`t${i - 1}`] : [];
    lines.push(
      `  - id: t${i}`,
      `    workstream_id: ws_${w}`,
      `    description: Implement part ${i - firstOf(w)} of module ${w}, with its tests and documentation.`,
      `    dependencies: [${deps.join(", ")}]`,
    );
  }
  return `${lines.join("\n")}\n`;
}

/**
 * What a scale run meets: a task a third into every third workstream (from the second) fails every
 * attempt, at most `failing` (nine); the first workstream's integration PR conflicts with its target
 * (left to a person); every attempt costs $0.50.
 */
export function scaleWorld(tasks: number, workstreams: number, failingAtMost = 9) {
  const { per, firstOf } = scaleLayout(tasks, workstreams);
  const failing: [string, number][] = [];
  for (let w = 1; w < workstreams && failing.length < failingAtMost; w += 3)
    failing.push([`t${Math.min(tasks - 1, firstOf(w) + Math.floor(per / 3))}`, Infinity]);
  return {
    failures: new Map(failing),
    integrationConflicts: new Map([["ws_0", 1]]),
    costPerAttempt: 500_000,
  };
}
