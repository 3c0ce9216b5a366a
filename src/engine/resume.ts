/**
 * Resuming a run with a changed graph (a push that edits a graph file of a running graph): finished
 * tasks are kept, attempts in flight keep going, everything else starts again, and what changed is
 * reported as drift. Unlike agentrelay, failed tasks are retried on resume (agentrelay carries the
 * failed workstream forward and blocks them), and attempt numbers keep counting so that no effect key
 * is ever reused.
 */
import type { Graph } from "../graph/model.ts";
import { childWorkstreams, type Decision, type Engine, newTaskRun } from "./engine.ts";
import { recordedSpend } from "./budget.ts";
import { Step } from "./step.ts";
import type { RunState } from "./types.ts";

export interface Resumed extends Decision {
  drift: string[];
}

export function resumeRun(engine: Engine, graph: Graph, previous: RunState, at: number): Resumed {
  const fresh = engine.start(at).state;
  if (fresh.fingerprint === previous.fingerprint) return { state: previous, effects: [], drift: [] };

  const drift: string[] = [];
  const state: RunState = {
    ...fresh,
    runKey: previous.runKey,
    runNumber: previous.runNumber,
    startedAt: previous.startedAt,
    seq: previous.seq,
    timeline: [...previous.timeline],
    taskFingerprints: fresh.taskFingerprints,
    // What was spent stays spent; which budgets are spent is worked out again against the new limits.
    ...(previous.budget ? { budget: { ...structuredClone(previous.budget), spent: {} } } : {}),
  };
  const { plan } = engine;

  for (const [id, old] of Object.entries(previous.tasks)) {
    if (!plan.tasks.has(id)) {
      drift.push(`task '${id}' was removed from the graph (it was ${old.status})`);
      continue;
    }
    const changed = previous.taskFingerprints[id] !== state.taskFingerprints[id];
    const task = state.tasks[id]!;
    if (
      old.status === "merged" ||
      old.status === "completed" ||
      old.status === "running" ||
      old.status === "pr_open"
    ) {
      Object.assign(task, { ...old, waitingOn: task.waitingOn });
      if (changed)
        drift.push(
          `task '${id}' changed after it ${old.status === "running" ? "started" : "finished"}; it is kept as it is`,
        );
    } else {
      // Pending, failed, blocked or cancelled: it runs again, with a fresh attempt budget.
      // Its attempts are kept, and so is what they said of how they ran (a network not filtered, with
      // its reason): the resumed run's report would otherwise drop it.
      Object.assign(task, newTaskRun(task.waitingOn), {
        attempt: old.attempt,
        attemptBase: old.attempt,
        attempts: old.attempts,
        pr: old.pr,
        opsConcerns: [...old.opsConcerns],
      });
      if (old.status === "failed" || old.status === "cancelled")
        drift.push(`task '${id}' (${old.status}) will run again`);
    }
  }
  for (const id of plan.order) if (!previous.tasks[id]) drift.push(`task '${id}' is new`);
  // Records of dropped tasks, of tasks that start again and of the fresh workstreams are gone: what they
  // spent stays spent, as cleared (a state that added up before adds up after).
  if (state.budget)
    state.budget.clearedMicros = Math.max(0, state.budget.run.spentMicros - recordedSpend(state));

  // Rebuild the derived counters from the carried task statuses.
  state.candidates = [];
  state.active = 0;
  for (const id of plan.order) {
    const task = state.tasks[id]!;
    task.waitingOn = plan.tasks.get(id)!.dependencies.filter((d) => {
      const s = state.tasks[d]!.status;
      return s !== "merged" && s !== "completed";
    }).length;
  }
  for (const [wsId, ws] of Object.entries(state.workstreams)) {
    const old = previous.workstreams[wsId];
    const own = plan.tasksByWorkstream.get(wsId)!;
    ws.unfinished = own.filter((id) => !["merged", "completed"].includes(state.tasks[id]!.status)).length;
    const holder = own.find((id) => ["running", "pr_open"].includes(state.tasks[id]!.status));
    ws.activeTask = holder ?? null;
    if (!old) continue;
    ws.preparation = old.preparation === "done" ? "done" : "none";
    if (old.integration === "merged" || old.integration === "open") {
      if (ws.unfinished > 0) {
        drift.push(
          `workstream '${wsId}' has new or reopened tasks after its integration PR was opened; it will be integrated again`,
        );
        if (old.integration === "open") Object.assign(ws, { integration: "open", pr: old.pr });
      } else {
        Object.assign(ws, {
          integration: old.integration,
          pr: old.pr,
          status: old.integration === "merged" ? "merged" : "pr_open",
        });
        ws.autoMergeSkipped = old.autoMergeSkipped;
      }
    } else if (old.integration === "skipped" && ws.unfinished === 0) {
      Object.assign(ws, { integration: "skipped", status: "merged" });
    }
    if (ws.status === "pending" && (ws.activeTask !== null || ws.preparation === "done"))
      ws.status = "active";
  }
  for (const id of plan.order) {
    const task = state.tasks[id]!;
    if (task.status === "running" || task.status === "pr_open") state.active++;
    if (task.status === "pending" && task.waitingOn === 0) state.candidates.push(id);
  }
  for (const [key, value] of [
    ["max_concurrency", "maxConcurrency"],
    ["max_task_attempts", "maxTaskAttempts"],
  ] as const) {
    if (previous.settings[value] !== state.settings[value]) {
      drift.push(`${key} changed from ${previous.settings[value]} to ${state.settings[value]}`);
    }
  }

  const step = new Step(plan, state, at, childWorkstreams(graph));
  step.unblock();
  for (const wsId of plan.workstreams.keys()) step.workstreamProgress(wsId);
  step.dispatchPass();
  step.completionCheck();
  state.seq++;
  step.emit({ type: "update_status", key: step.key("status") });
  return { state, effects: step.effects, drift };
}
