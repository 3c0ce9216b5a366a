/**
 * One `apply` call's mutable view of a run: the state it changes, the effects it collects, and the
 * requests every part of the engine makes (a task's PR merged or opened, a job cancelled). The
 * deciders (blocking.ts, budget.ts, conflicts.ts, verification.ts) change the run through it and
 * return what is theirs to decide; the scheduling moves that call on them (step.ts) and the switch of
 * events (apply-event.ts) apply it.
 */
import type { Plan } from "../plan/model.ts";
import type { StatusView } from "../plan/readiness.ts";
import type { EngineEffect, RunState, TaskRun, TimelineEntry, WorkstreamRun } from "./types.ts";

/** Mutable view of one `apply` call: collects effects and records whether anything changed. */
export class RunEdit {
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
  /** Collects an effect, naming the repository it acts in when that is not the graph's own. */
  emit(effect: EngineEffect): void {
    const workstream =
      "workstream" in effect
        ? effect.workstream
        : "task" in effect
          ? this.plan.tasks.get(effect.task)?.workstreamId
          : undefined;
    const repository =
      workstream === undefined ? undefined : this.plan.workstreams.get(workstream)?.repository;
    this.effects.push(repository === undefined ? effect : { ...effect, repository });
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

  /** A status view of the state, for the shared readiness rule. */
  readonly view: StatusView = {
    task: (id) => this.task(id).status,
    workstream: (id) => this.workstream(id).status,
    workstreamFailedItself: (id) => this.workstream(id).failedItself,
  };
}
