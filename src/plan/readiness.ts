/**
 * The dispatch rule of agentrelay (§3.4) and its blocked reasons (§3.5), as pure functions of statuses.
 * The engine calls `mayStart` for every candidate; `tasksToDispatch` applies it to a whole plan.
 *
 * One deliberate difference from agentrelay: a task failure does not stop the other tasks of its
 * workstream that do not depend on it. agentrelay closes the workstream at once, so what else in it
 * ran depends on timing; here only what can never run is blocked (dependents, child workstreams,
 * workstreams waiting for this one to merge), which makes a run's result independent of event order,
 * and a retry of the failed task finds the rest of its workstream done.
 */
import { ancestorsOf, type Plan } from "./model.ts";

export type TaskStatus =
  "pending" | "running" | "pr_open" | "merged" | "completed" | "failed" | "blocked" | "cancelled";
export type WorkstreamStatus = "pending" | "active" | "merge_ready" | "pr_open" | "merged" | "failed";

export interface StatusView {
  task(id: string): TaskStatus;
  workstream(id: string): WorkstreamStatus;
  /** True when a workstream failed for its own reason (preparation, integration PR), not a task's. */
  workstreamFailedItself(id: string): boolean;
}

export const isTaskDone = (s: TaskStatus): boolean => s === "merged" || s === "completed";
/** A task holding its workstream: running, or its PR waiting to merge. */
export const isTaskActive = (s: TaskStatus): boolean => s === "running" || s === "pr_open";
export const isTaskTerminal = (s: TaskStatus): boolean =>
  s === "merged" || s === "completed" || s === "failed" || s === "blocked" || s === "cancelled";

export interface DispatchLimits {
  maxConcurrency: number;
  failFastOnWorkstreamError: boolean;
}

/**
 * Whether a pending task whose dependencies are all done may start now (capacity aside): its
 * workstream is open and free, its ancestor workstreams have integration PRs (open or merged), and the
 * workstreams of its dependencies in other workstreams are merged.
 */
export function mayStart(
  plan: Plan,
  view: StatusView,
  id: string,
  workstreamBusy: (ws: string) => boolean,
  limits: DispatchLimits,
  anyWorkstreamFailed: () => boolean,
): boolean {
  const ws = plan.tasks.get(id)!.workstreamId;
  const status = view.workstream(ws);
  if (status === "merge_ready" || status === "pr_open" || status === "merged") return false;
  if (status === "failed" && view.workstreamFailedItself(ws)) return false;
  if (workstreamBusy(ws)) return false;
  for (const ancestor of ancestorsOf(plan, ws)) {
    const s = view.workstream(ancestor);
    if (s !== "pr_open" && s !== "merged") return false;
  }
  for (const upstream of plan.upstreamWorkstreams.get(id)!)
    if (view.workstream(upstream) !== "merged") return false;
  // Serialised overlaps: after the earlier task's workstream landed (or failed, so that it will not,
  // and the earlier task is over: a failure does not stop the rest of a workstream).
  for (const earlier of plan.serialAfter.get(id) ?? []) {
    const s = view.workstream(earlier.workstream);
    if (s !== "merged" && !(s === "failed" && isTaskTerminal(view.task(earlier.task)))) return false;
  }
  return !(status === "pending" && limits.failFastOnWorkstreamError && anyWorkstreamFailed());
}

/** Tasks to dispatch now, in canonical order, within capacity and one active task per workstream. */
export function tasksToDispatch(plan: Plan, view: StatusView, limits: DispatchLimits): string[] {
  let active = 0;
  const busyLanes = new Set<string>();
  const anyWorkstreamFailed = () => [...plan.workstreams.keys()].some((w) => view.workstream(w) === "failed");
  for (const id of plan.order) {
    if (isTaskActive(view.task(id))) {
      active++;
      busyLanes.add(plan.tasks.get(id)!.workstreamId);
    }
  }
  const chosen: string[] = [];
  for (const id of plan.order) {
    if (active >= limits.maxConcurrency) break;
    if (view.task(id) !== "pending") continue;
    if (!plan.tasks.get(id)!.dependencies.every((d) => isTaskDone(view.task(d)))) continue;
    if (!mayStart(plan, view, id, (ws) => busyLanes.has(ws), limits, anyWorkstreamFailed)) continue;
    chosen.push(id);
    busyLanes.add(plan.tasks.get(id)!.workstreamId);
    active++;
  }
  return chosen;
}

/**
 * Why a pending task can never run because something failed, or null. First match wins, with
 * agentrelay's reasons. A workstream that cannot complete (one of its tasks failed or is blocked)
 * blocks its child workstreams and the workstreams that wait for it to merge.
 */
export function failureBlockReason(plan: Plan, view: StatusView, id: string): string | null {
  const task = plan.tasks.get(id)!;
  for (const dep of task.dependencies) {
    const s = view.task(dep);
    if (s === "failed" || s === "blocked") return `dependency '${dep}' failed`;
    if (s === "cancelled") return `dependency '${dep}' was cancelled`;
  }
  const ws = task.workstreamId;
  if (view.workstream(ws) === "failed" && view.workstreamFailedItself(ws)) return `workstream '${ws}' failed`;
  for (const ancestor of ancestorsOf(plan, ws)) {
    if (view.workstream(ancestor) === "failed") return `ancestor workstream '${ancestor}' failed`;
  }
  for (const upstream of plan.upstreamWorkstreams.get(id)!) {
    if (view.workstream(upstream) === "failed") return `upstream workstream '${upstream}' failed`;
  }
  return null;
}
