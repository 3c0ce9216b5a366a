/**
 * Failure propagation, applied as soon as a failure is known (agentrelay marks blocked tasks only once
 * nothing else runs). Only what can never run is blocked: a broken task blocks its dependents and marks
 * its workstream failed (it can no longer integrate), which blocks child workstreams' tasks and the
 * tasks in other workstreams waiting for it to merge. A workstream that failed for its own reason
 * (preparation) also blocks its own pending tasks. Reasons use agentrelay's wording (see
 * plan/readiness.ts). `recompute` rebuilds all of it after a retry or a human merge.
 */
import type { Step } from "./step.ts";

type Work = { kind: "task"; id: string } | { kind: "workstream"; id: string };

export class Blocking {
  private readonly queue: Work[] = [];

  constructor(private readonly step: Step) {}

  /** A task failed, was cancelled or was blocked. */
  taskBroke(id: string): void {
    this.queue.push({ kind: "task", id });
    this.drain();
  }

  /** A workstream failed for its own reason. */
  workstreamBroke(wsId: string, reason: string): void {
    this.failWorkstream(wsId, reason);
    this.drain();
  }

  /** Clears derived blocking and rebuilds it from the explicit failures that remain. */
  recompute(): void {
    const { state, plan } = this.step;
    for (const id of plan.order) {
      if (state.tasks[id]!.status !== "blocked") continue;
      const t = this.step.task(id);
      t.status = "pending";
      t.reason = null;
      if (t.waitingOn === 0) this.step.addCandidate(id);
      this.step.changed = true;
    }
    for (const [wsId] of plan.workstreams) {
      const ws = state.workstreams[wsId]!;
      if (ws.status !== "failed" || ws.failedItself) continue;
      ws.reason = null;
      ws.status =
        ws.integration === "merged" || ws.integration === "skipped"
          ? "merged"
          : ws.integration === "open" && ws.unfinished === 0
            ? "pr_open"
            : ws.activeTask !== null || ws.preparation === "done"
              ? "active"
              : "pending";
      this.step.changed = true;
    }
    for (const id of plan.order) {
      const status = state.tasks[id]!.status;
      if (status === "failed" || status === "cancelled") this.queue.push({ kind: "task", id });
    }
    for (const [wsId] of plan.workstreams) {
      if (state.workstreams[wsId]!.failedItself) this.queue.push({ kind: "workstream", id: wsId });
    }
    this.drain();
    for (const [wsId] of plan.workstreams) this.step.workstreamProgress(wsId);
    // A finished run whose failure was undone (a retry, a human merge) has work again.
    if (
      state.outcome !== null &&
      !state.cancelled &&
      Object.values(state.tasks).some((t) => t.status === "pending")
    ) {
      state.outcome = null;
      state.finishedAt = null;
      this.step.changed = true;
    }
  }

  private block(id: string, reason: string): void {
    const t = this.step.task(id);
    if (t.status !== "pending") return;
    this.step.removeCandidate(id);
    t.status = "blocked";
    t.reason = reason;
    this.step.log({ type: "task_blocked", task: id, detail: reason });
    this.queue.push({ kind: "task", id });
  }

  private failWorkstream(wsId: string, reason: string): void {
    const ws = this.step.workstream(wsId);
    if (ws.status === "merged") return;
    if (ws.status !== "failed") {
      ws.status = "failed";
      ws.reason ??= reason;
      this.step.changed = true;
    }
    this.queue.push({ kind: "workstream", id: wsId });
  }

  private drain(): void {
    const { plan } = this.step;
    const seenLanes = new Set<string>();
    while (this.queue.length > 0) {
      const work = this.queue.shift()!;
      if (work.kind === "task") {
        const t = this.step.task(work.id);
        const verb = t.status === "cancelled" ? "was cancelled" : "failed";
        for (const dependent of plan.dependents.get(work.id)!)
          this.block(dependent, `dependency '${work.id}' ${verb}`);
        this.failWorkstream(plan.tasks.get(work.id)!.workstreamId, `task '${work.id}' ${verb}`);
        continue;
      }
      if (seenLanes.has(work.id)) continue;
      seenLanes.add(work.id);
      const own = plan.tasksByWorkstream.get(work.id)!;
      if (this.step.workstream(work.id).failedItself)
        for (const id of own) this.block(id, `workstream '${work.id}' failed`);
      for (const child of this.step.children.get(work.id) ?? []) {
        for (const id of plan.tasksByWorkstream.get(child)!)
          this.block(id, `ancestor workstream '${work.id}' failed`);
      }
      for (const id of own) {
        for (const dependent of plan.dependents.get(id)!) {
          if (plan.tasks.get(dependent)!.workstreamId !== work.id) {
            this.block(dependent, `upstream workstream '${work.id}' failed`);
          }
        }
      }
    }
  }
}
