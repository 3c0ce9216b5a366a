/**
 * The run engine: `decide(state, event) -> { state, effects }`, pure and deterministic.
 *
 * Scheduling follows agentrelay (§3-4): readiness in canonical order, one active task per workstream,
 * child workstreams after their parent's integration PR opens, cross-workstream dependents after the
 * upstream workstream merges, `max_concurrency`, `max_task_attempts`, failure propagation with the
 * same blocked reasons, integration and concern-gated auto-merge. Where agentrelay has flaws this
 * engine differs: blocked tasks are marked as soon as a failure is known, a retried task keeps its
 * identity (dependents resume), a closed integration PR is noticed, every attempt has a deadline, and
 * retry errors are not counted as design concerns.
 *
 * Idempotent by construction: an event that changes nothing leaves the state untouched (same `seq`),
 * events about an attempt other than the current one are ignored, and every effect carries a
 * deterministic key (graph, run, task, attempt).
 */
import { createHash } from "node:crypto";
import { MICROS_PER_USD } from "../graph/amount.ts";
import type { Graph, Task } from "../graph/model.ts";
import { buildPlan } from "../plan/plan.ts";
import type { Plan } from "../plan/model.ts";
import { applyEvent } from "./apply-event.ts";
import { resolving } from "./conflicts.ts";
import { Step } from "./step.ts";
import { maybeAutoMerge } from "./verification.ts";
import type { EngineEffect, EngineEvent, RunState, TaskRun } from "./types.ts";

export interface EngineOptions {
  /** Wall-clock limit of one attempt; a job that has not reported by then is timed out. */
  attemptTimeoutMs?: number;
  runNumber?: number;
  /** Keep only the latest entries of the timeline in the state (adapters store it; the simulator prints all). */
  timelineLimit?: number;
}

export const DEFAULT_ATTEMPT_TIMEOUT_MS = 2 * 60 * 60 * 1000;

export interface Decision {
  state: RunState;
  effects: EngineEffect[];
}

/**
 * Operational keys left unset are not part of a fingerprint, so runs from before them keep theirs.
 * Amounts are micro-dollars in the model; fingerprints were first taken of dollars, under other
 * names: a set amount is hashed as it was (a micro-dollar count divided by a million is the very
 * float the file's decimal parses to), so that a run started before micro-dollars resumes without
 * drift.
 */
const AS_DOLLARS: Record<string, string> = {
  maxCostMicros: "maxCostUsd",
  maxAttemptCostMicros: "maxAttemptCostUsd",
  minAttemptCostMicros: "minAttemptCostUsd",
};
const LATER_KEYS = new Set([
  ...Object.keys(AS_DOLLARS),
  ...Object.values(AS_DOLLARS),
  "maxResolutionAttempts",
  "integrationGate",
  "verifyIntegration",
  "maxRepairAttempts",
  "maxVerifications",
  "overlaps",
  "testPaths",
  "protectTests",
]);
type MaybeAmounts = {
  maxCostMicros?: unknown;
  maxAttemptCostMicros?: unknown;
  minAttemptCostMicros?: unknown;
};
const unsetLaterKeysLeftOut = (key: string, value: unknown) => {
  if (value === null) return LATER_KEYS.has(key) ? undefined : value;
  if (typeof value !== "object") return value;
  const amounts = value as MaybeAmounts;
  // Most tasks set no amount: their object is hashed as it is.
  if (
    amounts.maxCostMicros == null &&
    amounts.maxAttemptCostMicros == null &&
    amounts.minAttemptCostMicros == null
  )
    return value;
  return Object.fromEntries(
    Object.entries(value).map(([k, v]) =>
      k in AS_DOLLARS ? [AS_DOLLARS[k], v === null ? null : (v as number) / MICROS_PER_USD] : [k, v],
    ),
  );
};

/** Stable content hash of a graph, to tell whether a run still follows the same definition. */
export function graphFingerprint(graph: Graph): string {
  const { file: _file, ...content } = graph;
  return createHash("sha256")
    .update(JSON.stringify(content, unsetLaterKeysLeftOut))
    .digest("hex")
    .slice(0, 16);
}

export interface Engine {
  plan: Plan;
  /** A new run's state and its first effects. */
  start(at: number): Decision;
  /**
   * Applies an event to `state` in place and returns the effects. `touched` collects the ids of the
   * tasks whose records may have changed (a superset), for stores that write only those.
   */
  apply(state: RunState, event: EngineEvent, touched?: Set<string>): EngineEffect[];
  /** Pure: the next state (a copy) and the effects. */
  decide(state: RunState, event: EngineEvent): Decision;
  /**
   * Effects the state is waiting on whose answer may have been lost (a crash between a write and its
   * effect): the reconciler issues them again. Adapters execute effects idempotently, by key.
   */
  pendingEffects(state: RunState): EngineEffect[];
}

export function createEngine(graph: Graph, options: EngineOptions = {}): Engine {
  const plan = buildPlan(graph);
  const children = childWorkstreams(graph);

  const finishStep = (step: Step): EngineEffect[] => {
    step.dispatchPass();
    step.completionCheck();
    if (step.changed) {
      step.state.seq++;
      if (!step.quiet) step.emit({ type: "update_status", key: step.key("status") });
    }
    return step.effects;
  };

  const start = (at: number): Decision => {
    const runNumber = options.runNumber ?? 1;
    const state: RunState = {
      schemaVersion: 1,
      runKey: `${graph.name}/${runNumber}`,
      graph: graph.name,
      runNumber,
      fingerprint: graphFingerprint(graph),
      taskFingerprints: Object.fromEntries(graph.tasks.map((t) => [t.id, taskFingerprint(t)])),
      startedAt: at,
      seq: 0,
      settings: {
        maxConcurrency: graph.settings.maxConcurrency,
        maxTaskAttempts: graph.settings.maxTaskAttempts,
        attemptTimeoutMs: options.attemptTimeoutMs ?? DEFAULT_ATTEMPT_TIMEOUT_MS,
        failFastOnWorkstreamError: graph.settings.failFastOnWorkstreamError,
      },
      tasks: {},
      workstreams: {},
      active: 0,
      candidates: [],
      cancelled: false,
      outcome: null,
      finishedAt: null,
      timeline: [],
    };
    for (const ws of graph.workstreams) {
      state.workstreams[ws.id] = {
        status: "pending",
        preparation: "none",
        integration: "none",
        pr: null,
        reason: null,
        failedItself: false,
        unfinished: plan.tasksByWorkstream.get(ws.id)!.length,
        activeTask: null,
        autoMergeSkipped: false,
      };
    }
    for (const id of plan.order) {
      const deps = plan.tasks.get(id)!.dependencies.length;
      state.tasks[id] = newTaskRun(deps);
      if (deps === 0) state.candidates.push(id);
    }
    const step = new Step(plan, state, at, children, options.timelineLimit);
    step.changed = true;
    return { state, effects: finishStep(step) };
  };

  const apply = (state: RunState, event: EngineEvent, touched?: Set<string>): EngineEffect[] => {
    const step = new Step(plan, state, event.at, children, options.timelineLimit, touched);
    applyEvent(step, event);
    return finishStep(step);
  };

  const pendingEffects = (original: RunState): EngineEffect[] => {
    // On a copy: working out an auto-merge may note that it is skipped, which is not this call's to record.
    const state = structuredClone(original);
    const step = new Step(plan, state, state.startedAt, children);
    for (const [wsId, ws] of Object.entries(state.workstreams)) {
      if (ws.preparation === "requested") {
        step.requestPreparation(wsId);
      }
    }
    for (const id of plan.order) {
      const t = state.tasks[id]!;
      // A merge that waits for a running resolution is asked again when it ends.
      if (t.status === "pr_open" && !resolving(t.conflict)) step.requestTaskPr(id);
    }
    for (const [wsId, ws] of Object.entries(state.workstreams)) {
      if (ws.integration === "opening") {
        step.requestIntegration(wsId);
      } else if (ws.status === "pr_open" && ws.conflict?.toPerson && ws.pr) {
        // Conflicts left to a person: the merge is tried again, so that their push is noticed.
        step.emit({
          type: "merge_integration_pr",
          key: step.key("ws", wsId, "merge"),
          workstream: wsId,
          pr: ws.pr,
          resolutions: ws.conflict.resolutions.length,
        });
      } else if (ws.status === "pr_open" && !resolving(ws.conflict)) {
        maybeAutoMerge(step, wsId);
      }
    }
    // Only what is safe to repeat: a verification or repair this copy would start is started by a
    // fact (the tick's landingsDue), so that its record is written before its job.
    return step.effects.filter((e) => e.type !== "verify_integration" && e.type !== "repair_integration");
  };

  return {
    plan,
    start,
    apply,
    pendingEffects,
    decide: (state, event) => {
      const next = structuredClone(state);
      const effects = apply(next, event);
      return { state: next.seq === state.seq ? state : next, effects };
    },
  };
}

/** Child workstreams of each workstream. */
export function childWorkstreams(graph: Graph): Map<string, string[]> {
  const children = new Map<string, string[]>(graph.workstreams.map((w) => [w.id, []]));
  for (const w of graph.workstreams) if (w.parentId) children.get(w.parentId)!.push(w.id);
  return children;
}

export function taskFingerprint(task: Task): string {
  return createHash("sha256").update(JSON.stringify(task, unsetLaterKeysLeftOut)).digest("hex").slice(0, 12);
}

export function newTaskRun(waitingOn: number): TaskRun {
  return {
    status: "pending",
    attempt: 0,
    attemptBase: 0,
    attempts: [],
    pr: null,
    noPr: false,
    reason: null,
    waitingOn,
    concerns: [],
    opsConcerns: [],
    summary: null,
    outputs: [],
    mergedAt: null,
  };
}
