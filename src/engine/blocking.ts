/**
 * Failure propagation, applied as soon as a failure is known (agentrelay marks blocked tasks only once
 * nothing else runs). Only what can never run is blocked: a broken task blocks its dependents and marks
 * its workstream failed (it can no longer integrate), which blocks child workstreams' tasks and the
 * tasks in other workstreams waiting for it to merge. A workstream that failed for its own reason
 * (preparation) also blocks its own pending tasks. Reasons use agentrelay's wording (see
 * plan/readiness.ts). `recompute` rebuilds all of it after a retry or a human merge.
 */
import { ancestorsOf, type Plan } from "../plan/model.ts";
import type { RunEdit } from "./run-edit.ts";
import type { RunState } from "./types.ts";

/**
 * What broke, at the root of what it blocks: a task that failed or was cancelled, or a workstream that
 * failed for its own reason (its preparation, its integration PR).
 */
export type Root = { task: string } | { workstream: string };

/** The root in words: "task 'x' failed", "workstream 'w' failed". */
export function rootText(root: Root, state: RunState): string {
  if ("workstream" in root) return `workstream '${root.workstream}' failed`;
  return `task '${root.task}' ${state.tasks[root.task]?.status === "cancelled" ? "was cancelled" : "failed"}`;
}

type Work = { kind: "task"; id: string; root: Root } | { kind: "workstream"; id: string; root: Root };

export class Blocking {
  private readonly queue: Work[] = [];

  constructor(private readonly step: RunEdit) {}

  /** A task failed, was cancelled or was blocked. */
  taskBroke(id: string): void {
    this.queue.push({ kind: "task", id, root: { task: id } });
    this.drain();
  }

  /** A workstream failed for its own reason. */
  workstreamBroke(wsId: string, reason: string): void {
    this.failWorkstream(wsId, reason, { workstream: wsId });
    this.drain();
  }

  /**
   * Clears derived blocking and rebuilds it from the explicit failures that remain (Step.unblock then
   * moves on the workstreams it freed).
   */
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
      if (status === "failed" || status === "cancelled")
        this.queue.push({ kind: "task", id, root: { task: id } });
    }
    for (const [wsId] of plan.workstreams) {
      if (state.workstreams[wsId]!.failedItself)
        this.queue.push({ kind: "workstream", id: wsId, root: { workstream: wsId } });
    }
    this.drain();
  }

  private block(id: string, reason: string, root: Root): void {
    const t = this.step.task(id);
    if (t.status !== "pending") return;
    this.step.removeCandidate(id);
    t.status = "blocked";
    t.reason = reason;
    this.step.log({ type: "task_blocked", task: id, detail: reason });
    this.queue.push({ kind: "task", id, root });
  }

  private failWorkstream(wsId: string, reason: string, root: Root): void {
    const ws = this.step.workstream(wsId);
    if (ws.status === "merged") return;
    if (ws.status !== "failed") {
      ws.status = "failed";
      ws.reason ??= reason;
      this.step.changed = true;
    }
    this.queue.push({ kind: "workstream", id: wsId, root });
  }

  private drain(): void {
    const { plan } = this.step;
    const seenLanes = new Set<string>();
    while (this.queue.length > 0) {
      const work = this.queue.shift()!;
      const { root } = work;
      if (work.kind === "task") {
        const t = this.step.task(work.id);
        const verb = t.status === "cancelled" ? "was cancelled" : "failed";
        for (const dependent of plan.dependents.get(work.id)!)
          this.block(dependent, `dependency '${work.id}' ${verb}`, root);
        // A workstream whose task is only blocked is blocked too: its reason names what broke.
        const own = "task" in root && root.task === work.id;
        const reason = own ? `task '${work.id}' ${verb}` : `blocked: ${rootText(root, this.step.state)}`;
        this.failWorkstream(plan.tasks.get(work.id)!.workstreamId, reason, root);
        continue;
      }
      if (seenLanes.has(work.id)) continue;
      seenLanes.add(work.id);
      const own = plan.tasksByWorkstream.get(work.id)!;
      if (this.step.workstream(work.id).failedItself)
        for (const id of own) this.block(id, `workstream '${work.id}' failed`, root);
      for (const child of this.step.children.get(work.id) ?? []) {
        for (const id of plan.tasksByWorkstream.get(child)!)
          this.block(id, `ancestor workstream '${work.id}' failed`, root);
      }
      for (const id of own) {
        for (const dependent of plan.dependents.get(id)!) {
          if (plan.tasks.get(dependent)!.workstreamId !== work.id) {
            this.block(dependent, `upstream workstream '${work.id}' failed`, root);
          }
        }
      }
    }
  }
}

/**
 * The root of each blocked task and of each workstream failed by a task's failure, worked out from
 * the statuses alone (runs from before roots were named have them too), following the reasons the
 * drain gives: a broken dependency, the task's own workstream, an ancestor, an upstream workstream.
 */
export function rootCauses(
  plan: Plan,
  state: RunState,
): { tasks: Map<string, Root>; workstreams: Map<string, Root> } {
  const roots = new Map<string, Root>();
  const wsRoots = new Map<string, Root | null>();
  const visiting = new Set<string>();
  const ofTask = (id: string): Root | null => {
    const t = state.tasks[id]!;
    if (t.status === "failed" || t.status === "cancelled") return { task: id };
    if (t.status !== "blocked") return null;
    const known = roots.get(id);
    if (known) return known;
    if (visiting.has(id)) return null;
    visiting.add(id);
    const task = plan.tasks.get(id)!;
    let root: Root | null = null;
    for (const dep of task.dependencies) if ((root = ofTask(dep))) break;
    const ws = state.workstreams[task.workstreamId]!;
    if (!root && ws.status === "failed" && ws.failedItself) root = { workstream: task.workstreamId };
    for (const w of ancestorsOf(plan, task.workstreamId)) if (!root) root = ofWorkstream(w);
    for (const w of plan.upstreamWorkstreams.get(id)!) if (!root) root = ofWorkstream(w);
    visiting.delete(id);
    if (root) roots.set(id, root);
    return root;
  };
  const ofWorkstream = (wsId: string): Root | null => {
    const ws = state.workstreams[wsId]!;
    if (ws.status !== "failed") return null;
    if (ws.failedItself) return { workstream: wsId };
    if (wsRoots.has(wsId)) return wsRoots.get(wsId)!;
    wsRoots.set(wsId, null);
    const own = plan.tasksByWorkstream.get(wsId)!;
    // Its own failures first: a workstream with a failed task is failed, not blocked.
    const broken = own.find(
      (id) => state.tasks[id]!.status === "failed" || state.tasks[id]!.status === "cancelled",
    );
    let root: Root | null = broken ? { task: broken } : null;
    for (const id of own) if (!root && state.tasks[id]!.status === "blocked") root = ofTask(id);
    wsRoots.set(wsId, root);
    return root;
  };
  for (const id of plan.order) ofTask(id);
  const workstreams = new Map<string, Root>();
  for (const [wsId] of plan.workstreams) {
    const root = state.workstreams[wsId]!.failedItself ? null : ofWorkstream(wsId);
    if (root) workstreams.set(wsId, root);
  }
  return { tasks: roots, workstreams };
}
