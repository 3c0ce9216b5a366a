/**
 * The scheduling moves every event shares, on one `apply` call's view of a run (run-edit.ts):
 * dispatching what is ready, finishing and failing tasks, moving workstreams to integration. The
 * deciders it calls on (blocking, budget, verification) return or record what they decide; Step and
 * apply-event.ts apply it. The engine (engine.ts) creates one per event.
 */
import type { Micros } from "../graph/amount.ts";
import { isTaskActive, isTaskTerminal, mayStart } from "../plan/readiness.ts";
import { Blocking } from "./blocking.ts";
import { allowance, noteSpent, reserve, unreserve } from "./budget.ts";
import { RunEdit } from "./run-edit.ts";
import type { CapScope } from "./types.ts";
import { maybeAutoMerge } from "./verification.ts";

export class Step extends RunEdit {
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
    if (wasBroken) this.unblock();
    else this.workstreamProgress(this.plan.tasks.get(id)!.workstreamId);
  }

  /**
   * Rebuilds what is blocked from the failures that remain (after a retry, a human merge, a resume),
   * then moves on the workstreams that frees.
   */
  unblock(): void {
    const { state } = this;
    new Blocking(this).recompute();
    for (const [wsId] of this.plan.workstreams) this.workstreamProgress(wsId);
    // A finished run whose failure was undone (a retry, a human merge) has work again.
    if (
      state.outcome !== null &&
      !state.cancelled &&
      Object.values(state.tasks).some((t) => t.status === "pending")
    ) {
      state.outcome = null;
      state.finishedAt = null;
      this.changed = true;
    }
  }

  /** Moves a workstream forward when all of its own tasks are done. */
  workstreamProgress(wsId: string): void {
    const ws = this.workstream(wsId);
    if (ws.unfinished > 0 || ws.status === "failed" || ws.status === "merged") return;
    if (ws.integration === "open") {
      if (ws.status !== "pr_open") {
        ws.status = "pr_open";
        this.changed = true;
        maybeAutoMerge(this, wsId);
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
