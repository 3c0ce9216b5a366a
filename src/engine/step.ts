/**
 * One `apply` call's mutable view of a run: the state it changes, the effects it collects, and the
 * scheduling moves every event shares (dispatching what is ready, finishing and failing tasks,
 * moving workstreams to integration). The engine (engine.ts) creates one per event.
 */
import type { Micros } from "../graph/amount.ts";
import type { Plan } from "../plan/model.ts";
import { isTaskActive, isTaskTerminal, mayStart, type StatusView } from "../plan/readiness.ts";
import { Blocking } from "./blocking.ts";
import { allowance, type CapScope, noteSpent, reserve, unreserve } from "./budget.ts";
import type { EngineEffect, RunState, TaskRun, TimelineEntry, WorkstreamRun } from "./types.ts";
import { readyToLand } from "./verification.ts";

/** Mutable view of one `apply` call: collects effects and records whether anything changed. */
export class Step {
  readonly effects: EngineEffect[] = [];
  changed = false;
  /** The change is bookkeeping nobody reads on the status (which job runs an attempt): no status update. */
  quiet = false;

  constructor(
    readonly plan: Plan,
    readonly state: RunState,
    readonly at: number,
    readonly children: Map<string, string[]>,
    readonly timelineLimit?: number,
    /** Ids of the tasks this step may change, for stores that write per-task records. */
    readonly touched?: Set<string>,
  ) {}

  /** A task's record, to read or change: it counts as touched (a read-only scan uses `state.tasks`). */
  task(id: string): TaskRun {
    this.touched?.add(id);
    return this.state.tasks[id]!;
  }
  workstream(id: string): WorkstreamRun {
    return this.state.workstreams[id]!;
  }
  workstreamOf(taskId: string): WorkstreamRun {
    return this.workstream(this.plan.tasks.get(taskId)!.workstreamId);
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
    if (t.pr)
      this.emit({
        type: "merge_task_pr",
        key: this.key(id, "merge"),
        task: id,
        pr: t.pr,
        ...(t.conflict ? { resolutions: t.conflict.resolutions.length } : {}),
      });
    else this.emit({ type: "open_task_pr", key: this.key(id, "pr"), task: id, attempt: t.attempt });
  }

  requestPreparation(wsId: string): void {
    this.emit({ type: "prepare_workstream", key: this.key("ws", wsId, "prepare"), workstream: wsId });
  }

  requestIntegration(wsId: string): void {
    this.emit({
      type: "open_integration_pr",
      key: this.key("ws", wsId, "integration"),
      workstream: wsId,
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

  /** Frees the capacity and the workstream held by a task that stops being active. */
  release(id: string): void {
    const t = this.task(id);
    if (!isTaskActive(t.status)) return;
    unreserve(this, this.plan.tasks.get(id)!.workstreamId, t.attempts[t.attempt - 1]);
    this.state.active--;
    const ws = this.workstreamOf(id);
    if (ws.activeTask === id) ws.activeTask = null;
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
    const ws = this.workstreamOf(id);
    ws.unfinished--;
    for (const dependent of this.plan.dependents.get(id)!) {
      const d = this.task(dependent);
      d.waitingOn--;
      if (d.waitingOn === 0 && d.status === "pending") this.addCandidate(dependent);
    }
    // A human merging the PR of a failed task counts the same: recompute what it blocked.
    if (wasBroken) new Blocking(this).recompute();
    else this.workstreamProgress(this.plan.tasks.get(id)!.workstreamId);
  }

  /** Moves a workstream forward when all of its own tasks are done. */
  workstreamProgress(wsId: string): void {
    const ws = this.workstream(wsId);
    if (ws.unfinished > 0 || ws.status === "failed" || ws.status === "merged") return;
    if (ws.integration === "open") {
      if (ws.status !== "pr_open") {
        ws.status = "pr_open";
        this.changed = true;
        this.maybeAutoMerge(wsId);
      }
      return;
    }
    if (ws.integration !== "none") return;
    const own = this.plan.tasksByWorkstream.get(wsId)!;
    if (own.every((id) => this.task(id).pr === null)) {
      // Nothing was merged into the integration branch: there is nothing to integrate.
      ws.status = "merged";
      ws.integration = "skipped";
      this.changed = true;
      this.log({ type: "integration_skipped", workstream: wsId });
      return;
    }
    ws.status = "merge_ready";
    ws.integration = "opening";
    this.changed = true;
    this.requestIntegration(wsId);
  }

  /**
   * Auto-merge only when the workstream opts in and no task raised a design concern, and once the tree
   * that will land passed its gates (verification.ts: every integration PR is verified, auto-merged or not).
   */
  maybeAutoMerge(wsId: string): void {
    const ws = this.workstream(wsId);
    if (ws.status !== "pr_open" || !ws.pr) return;
    const ready = readyToLand(this, wsId);
    if (!ready || ws.autoMergeSkipped) return;
    if (!this.plan.workstreams.get(wsId)!.autoMerge) return;
    const concerns = this.plan.tasksByWorkstream.get(wsId)!.some((id) => this.task(id).concerns.length > 0);
    if (concerns) {
      ws.autoMergeSkipped = true;
      this.changed = true;
      return;
    }
    this.emit({
      type: "merge_integration_pr",
      key: this.key("ws", wsId, "merge"),
      workstream: wsId,
      pr: ws.pr,
      ...(ws.conflict ? { resolutions: ws.conflict.resolutions.length } : {}),
      ...(ready.verified ? { verified: ready.verified } : {}),
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

  /** Fails a workstream for its own reason (preparation, integration PR closed or failed). */
  failWorkstream(wsId: string, reason: string): void {
    const ws = this.workstream(wsId);
    if (ws.status === "merged" || (ws.status === "failed" && ws.failedItself)) return;
    ws.failedItself = true;
    ws.reason = reason;
    this.changed = true;
    new Blocking(this).workstreamBroke(wsId, reason);
  }

  /** A status view of the state, for the shared readiness rule. */
  readonly view: StatusView = {
    task: (id) => this.task(id).status,
    workstream: (id) => this.workstream(id).status,
    workstreamFailedItself: (id) => this.workstream(id).failedItself,
  };

  /** Dispatches what is ready, in canonical order, within capacity and workstream rules. */
  dispatchPass(): void {
    const s = this.state;
    if (s.cancelled || s.outcome !== null) return;
    let anyFailed: boolean | undefined;
    const anyWorkstreamFailed = () =>
      (anyFailed ??= Object.values(s.workstreams).some((w) => w.status === "failed"));
    const busy = (ws: string) => this.workstream(ws).activeTask !== null;
    for (const id of [...s.candidates]) {
      if (s.active >= s.settings.maxConcurrency) break;
      const t = this.task(id);
      if (t.status !== "pending" || t.waitingOn > 0) continue;
      if (!mayStart(this.plan, this.view, id, busy, s.settings, anyWorkstreamFailed)) continue;
      const wsId = this.plan.tasks.get(id)!.workstreamId;
      const ws = this.workstream(wsId);
      if (ws.preparation !== "done") {
        if (ws.preparation === "none") {
          ws.preparation = "requested";
          this.changed = true;
          this.requestPreparation(wsId);
        }
        continue;
      }
      const allowed = allowance(this, id);
      if ("spent" in allowed) {
        noteSpent(this, allowed.scope, allowed.spent, id);
        continue;
      }
      if ("waits" in allowed) continue; // until running attempts give back what they hold
      this.dispatch(id, allowed.capMicros, allowed.capBy);
    }
  }

  dispatch(id: string, capMicros: Micros | null = null, capBy?: CapScope): void {
    const t = this.task(id);
    const ws = this.workstreamOf(id);
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
      costMicros: null,
      turns: null,
      pushedSha: null,
      gates: [],
      ...(capMicros !== null && capBy ? { capBy } : {}),
    });
    reserve(this, this.plan.tasks.get(id)!.workstreamId, t.attempts[t.attempt - 1]!, capMicros);
    ws.activeTask = id;
    if (ws.status === "pending") ws.status = "active";
    this.state.active++;
    this.changed = true;
    this.log({
      type: "dispatch",
      task: id,
      attempt: t.attempt,
      workstream: this.plan.tasks.get(id)!.workstreamId,
    });
    this.emit({
      type: "dispatch",
      key: this.key(id, t.attempt),
      task: id,
      attempt: t.attempt,
      ...(capMicros !== null ? { capMicros } : {}),
    });
  }

  /** Ends the run once every task is terminal and every integration has landed, failed or been skipped. */
  completionCheck(): void {
    const s = this.state;
    if (s.outcome !== null) return;
    // Every pending task is a candidate or waits on a task that is pending or active (a broken
    // dependency would have blocked it), so nothing active and no candidate means all are terminal.
    if (s.active > 0 || s.candidates.length > 0) return;
    // An integration PR still open waits for its merge (automatic, or a person's): the run is not
    // over until it lands or is closed, unless the run was cancelled.
    for (const [wsId] of this.plan.workstreams) {
      const ws = this.workstream(wsId);
      if (ws.integration === "opening") return;
      if (ws.status === "pr_open" && !s.cancelled) return;
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
