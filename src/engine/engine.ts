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
import type { Graph, Task } from "../graph/model.ts";
import { buildPlan, type Plan } from "../plan/plan.ts";
import { isTaskActive, isTaskTerminal, mayStart, type StatusView } from "../plan/readiness.ts";
import { Blocking } from "./blocking.ts";
import { applyEvent } from "./apply-event.ts";
import type { EngineEffect, EngineEvent, RunState, TaskRun, TimelineEntry, WorkstreamRun } from "./types.ts";

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

/** Stable content hash of a graph, to tell whether a run still follows the same definition. */
export function graphFingerprint(graph: Graph): string {
  const { file: _file, ...content } = graph;
  return createHash("sha256").update(JSON.stringify(content)).digest("hex").slice(0, 16);
}

/** Mutable view of one `apply` call: collects effects and records whether anything changed. */
export class Step {
  readonly effects: EngineEffect[] = [];
  changed = false;

  constructor(
    readonly plan: Plan,
    readonly state: RunState,
    readonly at: number,
    readonly children: Map<string, string[]>,
    readonly timelineLimit?: number,
  ) {}

  task(id: string): TaskRun {
    return this.state.tasks[id]!;
  }
  lane(id: string): WorkstreamRun {
    return this.state.workstreams[id]!;
  }
  laneOf(taskId: string): WorkstreamRun {
    return this.lane(this.plan.tasks.get(taskId)!.workstreamId);
  }
  emit(effect: EngineEffect): void {
    this.effects.push(effect);
  }
  log(entry: Omit<TimelineEntry, "at">): void {
    const timeline = this.state.timeline;
    timeline.push({ at: this.at, ...entry });
    // Trimmed in batches, so that appending stays cheap.
    if (this.timelineLimit && timeline.length > this.timelineLimit * 1.5)
      timeline.splice(0, timeline.length - this.timelineLimit);
    this.changed = true;
  }
  key(...parts: (string | number)[]): string {
    return [this.state.runKey, ...parts].join("/");
  }

  /** Inserts a task into the candidate list, keeping canonical order. */
  addCandidate(id: string): void {
    const list = this.state.candidates;
    const rank = this.plan.rank.get(id)!;
    let lo = 0;
    let hi = list.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.plan.rank.get(list[mid]!)! < rank) lo = mid + 1;
      else hi = mid;
    }
    if (list[lo] !== id) list.splice(lo, 0, id);
  }
  removeCandidate(id: string): void {
    const i = this.state.candidates.indexOf(id);
    if (i !== -1) this.state.candidates.splice(i, 1);
  }

  /** Asks for the task's PR: merged when it is known, opened otherwise. */
  requestTaskPr(id: string): void {
    const t = this.task(id);
    if (t.pr) this.emit({ type: "merge_task_pr", key: this.key(id, "merge"), task: id, pr: t.pr });
    else this.emit({ type: "open_task_pr", key: this.key(id, "pr"), task: id, attempt: t.attempt });
  }

  requestPreparation(laneId: string): void {
    this.emit({ type: "prepare_workstream", key: this.key("ws", laneId, "prepare"), workstream: laneId });
  }

  requestIntegration(laneId: string): void {
    this.emit({
      type: "open_integration_pr",
      key: this.key("ws", laneId, "integration"),
      workstream: laneId,
    });
  }

  /** Asks the adapter to stop the task's job, if one is running. */
  cancelAttempt(id: string): void {
    const t = this.task(id);
    if (t.status !== "running") return;
    this.emit({
      type: "cancel_attempt",
      key: this.key(id, t.attempt, "cancel"),
      task: id,
      attempt: t.attempt,
    });
  }

  /** Frees the capacity and the lane held by a task that stops being active. */
  release(id: string): void {
    const t = this.task(id);
    if (!isTaskActive(t.status)) return;
    this.state.active--;
    const lane = this.laneOf(id);
    if (lane.activeTask === id) lane.activeTask = null;
  }

  /** A task finished successfully (PR merged, or completed without a PR). */
  finishTask(id: string, status: "merged" | "completed"): void {
    const t = this.task(id);
    if (t.status === status) return;
    const wasBroken = t.status === "failed" || t.status === "blocked" || t.status === "cancelled";
    this.release(id);
    this.removeCandidate(id);
    t.status = status;
    t.reason = null;
    t.mergedAt = this.at;
    this.changed = true;
    if (status === "merged") this.log({ type: "task_merged", task: id, attempt: t.attempt });
    const lane = this.laneOf(id);
    lane.unfinished--;
    for (const dependent of this.plan.dependents.get(id)!) {
      const d = this.task(dependent);
      d.waitingOn--;
      if (d.waitingOn === 0 && d.status === "pending") this.addCandidate(dependent);
    }
    // A human merging the PR of a failed task counts the same: recompute what it blocked.
    if (wasBroken) new Blocking(this).recompute();
    else this.laneProgress(this.plan.tasks.get(id)!.workstreamId);
  }

  /** Moves a lane forward when all of its own tasks are done. */
  laneProgress(laneId: string): void {
    const lane = this.lane(laneId);
    if (lane.unfinished > 0 || lane.status === "failed" || lane.status === "merged") return;
    if (lane.integration === "open") {
      if (lane.status !== "pr_open") {
        lane.status = "pr_open";
        this.changed = true;
        this.maybeAutoMerge(laneId);
      }
      return;
    }
    if (lane.integration !== "none") return;
    const own = this.plan.tasksByWorkstream.get(laneId)!;
    if (own.every((id) => this.task(id).pr === null)) {
      // Nothing was merged into the integration branch: there is nothing to integrate.
      lane.status = "merged";
      lane.integration = "skipped";
      this.changed = true;
      this.log({ type: "integration_skipped", workstream: laneId });
      return;
    }
    lane.status = "merge_ready";
    lane.integration = "opening";
    this.changed = true;
    this.requestIntegration(laneId);
  }

  /** Auto-merge only when the workstream opts in and no task raised a design concern. */
  maybeAutoMerge(laneId: string): void {
    const lane = this.lane(laneId);
    if (lane.status !== "pr_open" || !lane.pr || lane.autoMergeSkipped) return;
    if (!this.plan.workstreams.get(laneId)!.autoMerge) return;
    const concerns = this.plan.tasksByWorkstream.get(laneId)!.some((id) => this.task(id).concerns.length > 0);
    if (concerns) {
      lane.autoMergeSkipped = true;
      this.changed = true;
      return;
    }
    this.emit({
      type: "merge_integration_pr",
      key: this.key("ws", laneId, "merge"),
      workstream: laneId,
      pr: lane.pr,
    });
  }

  /** A task failed (or was cancelled): retry if its budget allows, else fail it and block what depends on it. */
  failTask(id: string, reason: string, kind: "failed" | "cancelled", retry: boolean): void {
    const t = this.task(id);
    if (isTaskTerminal(t.status)) return;
    this.release(id);
    this.changed = true;
    const used = t.attempt - t.attemptBase;
    if (retry && kind === "failed" && used < this.state.settings.maxTaskAttempts && !this.state.cancelled) {
      t.status = "pending";
      t.reason = reason;
      if (t.waitingOn === 0) this.addCandidate(id);
      this.log({ type: "task_failed", task: id, attempt: t.attempt, detail: `${reason} (will retry)` });
      return;
    }
    this.removeCandidate(id);
    t.status = kind;
    t.reason = reason;
    this.log({
      type: kind === "cancelled" ? "task_cancelled" : "task_failed",
      task: id,
      attempt: t.attempt,
      detail: reason,
    });
    new Blocking(this).taskBroke(id);
  }

  /** Fails a lane for its own reason (preparation, integration PR closed or failed). */
  failLane(laneId: string, reason: string): void {
    const lane = this.lane(laneId);
    if (lane.status === "merged" || (lane.status === "failed" && lane.failedItself)) return;
    lane.failedItself = true;
    lane.reason = reason;
    this.changed = true;
    new Blocking(this).laneBroke(laneId, reason);
  }

  /** A status view of the state, for the shared readiness rule. */
  readonly view: StatusView = {
    task: (id) => this.task(id).status,
    workstream: (id) => this.lane(id).status,
    workstreamFailedItself: (id) => this.lane(id).failedItself,
  };

  /** Dispatches what is ready, in canonical order, within capacity and lane rules. */
  dispatchPass(): void {
    const s = this.state;
    if (s.cancelled || s.outcome !== null) return;
    let anyFailed: boolean | undefined;
    const anyLaneFailed = () =>
      (anyFailed ??= Object.values(s.workstreams).some((w) => w.status === "failed"));
    const busy = (lane: string) => this.lane(lane).activeTask !== null;
    for (const id of [...s.candidates]) {
      if (s.active >= s.settings.maxConcurrency) break;
      const t = this.task(id);
      if (t.status !== "pending" || t.waitingOn > 0) continue;
      if (!mayStart(this.plan, this.view, id, busy, s.settings, anyLaneFailed)) continue;
      const laneId = this.plan.tasks.get(id)!.workstreamId;
      const lane = this.lane(laneId);
      if (lane.preparation !== "done") {
        if (lane.preparation === "none") {
          lane.preparation = "requested";
          this.changed = true;
          this.requestPreparation(laneId);
        }
        continue;
      }
      this.dispatch(id);
    }
  }

  dispatch(id: string): void {
    const t = this.task(id);
    const lane = this.laneOf(id);
    this.removeCandidate(id);
    t.attempt++;
    t.status = "running";
    t.noPr = false;
    t.attempts.push({
      n: t.attempt,
      dispatchedAt: this.at,
      deadline: this.at + this.state.settings.attemptTimeoutMs,
      startedAt: null,
      outcome: null,
      reason: null,
      costUsd: null,
      turns: null,
      pushedSha: null,
      gates: [],
    });
    lane.activeTask = id;
    if (lane.status === "pending") lane.status = "active";
    this.state.active++;
    this.changed = true;
    this.log({
      type: "dispatch",
      task: id,
      attempt: t.attempt,
      workstream: this.plan.tasks.get(id)!.workstreamId,
    });
    this.emit({ type: "dispatch", key: this.key(id, t.attempt), task: id, attempt: t.attempt });
  }

  /** Ends the run once every task is terminal and no integration is still in motion. */
  completionCheck(): void {
    const s = this.state;
    if (s.outcome !== null) return;
    // Every pending task is a candidate or waits on a task that is pending or active (a broken
    // dependency would have blocked it), so nothing active and no candidate means all are terminal.
    if (s.active > 0 || s.candidates.length > 0) return;
    for (const [laneId] of this.plan.workstreams) {
      const lane = this.lane(laneId);
      if (lane.integration === "opening") return;
      const autoMergePending =
        lane.status === "pr_open" && this.plan.workstreams.get(laneId)!.autoMerge && !lane.autoMergeSkipped;
      if (autoMergePending) return;
    }
    const failed =
      Object.values(s.tasks).some(
        (t) => t.status === "failed" || t.status === "blocked" || t.status === "cancelled",
      ) || Object.values(s.workstreams).some((w) => w.status === "failed");
    s.outcome = s.cancelled ? "cancelled" : failed ? "completed_with_failures" : "succeeded";
    s.finishedAt = this.at;
    this.changed = true;
    this.log({ type: "run_finished", detail: s.outcome });
    this.emit({ type: "finish_run", key: this.key("finish"), outcome: s.outcome });
  }
}

export interface Engine {
  plan: Plan;
  /** A new run's state and its first effects. */
  start(at: number): Decision;
  /** Applies an event to `state` in place and returns the effects (used by the simulator for speed). */
  apply(state: RunState, event: EngineEvent): EngineEffect[];
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
  const children = childLanes(graph);

  const finishStep = (step: Step): EngineEffect[] => {
    step.dispatchPass();
    step.completionCheck();
    if (step.changed) {
      step.state.seq++;
      step.emit({ type: "update_status", key: step.key("status") });
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

  const apply = (state: RunState, event: EngineEvent): EngineEffect[] => {
    const step = new Step(plan, state, event.at, children, options.timelineLimit);
    applyEvent(step, event);
    return finishStep(step);
  };

  const pendingEffects = (original: RunState): EngineEffect[] => {
    // On a copy: working out an auto-merge may note that it is skipped, which is not this call's to record.
    const state = structuredClone(original);
    const step = new Step(plan, state, state.startedAt, children);
    for (const [laneId, lane] of Object.entries(state.workstreams)) {
      if (lane.preparation === "requested") {
        step.requestPreparation(laneId);
      }
    }
    for (const id of plan.order) {
      const t = state.tasks[id]!;
      if (t.status === "pr_open") step.requestTaskPr(id);
    }
    for (const [laneId, lane] of Object.entries(state.workstreams)) {
      if (lane.integration === "opening") {
        step.requestIntegration(laneId);
      } else if (lane.status === "pr_open") {
        step.maybeAutoMerge(laneId);
      }
    }
    return step.effects;
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
export function childLanes(graph: Graph): Map<string, string[]> {
  const children = new Map<string, string[]>(graph.workstreams.map((w) => [w.id, []]));
  for (const w of graph.workstreams) if (w.parentId) children.get(w.parentId)!.push(w.id);
  return children;
}

export function taskFingerprint(task: Task): string {
  return createHash("sha256").update(JSON.stringify(task)).digest("hex").slice(0, 12);
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
