/**
 * The dispatch rule of agentrelay (§3.4) and its blocked reasons (§3.5), as pure functions of statuses.
 */
import type { Plan } from "./plan.ts";

export type TaskStatus =
  "pending" | "running" | "pr_open" | "merged" | "completed" | "failed" | "blocked" | "cancelled";
export type WorkstreamStatus = "pending" | "active" | "merge_ready" | "pr_open" | "merged" | "failed";

export interface StatusView {
  task(id: string): TaskStatus;
  workstream(id: string): WorkstreamStatus;
}

export const isTaskDone = (s: TaskStatus): boolean => s === "merged" || s === "completed";
/** A task holding its workstream: running, or its PR waiting to merge. */
export const isTaskActive = (s: TaskStatus): boolean => s === "running" || s === "pr_open";
export const isTaskTerminal = (s: TaskStatus): boolean =>
  s === "merged" || s === "completed" || s === "failed" || s === "blocked" || s === "cancelled";

const LANE_CLOSED: ReadonlySet<WorkstreamStatus> = new Set(["failed", "merge_ready", "pr_open", "merged"]);

export interface DispatchLimits {
  maxConcurrency: number;
  failFastOnWorkstreamError: boolean;
}

/**
 * Tasks to dispatch now, in canonical order: dependencies done, capacity left, one active task per
 * workstream, ancestor workstreams integrated (PR open or merged), upstream workstreams merged.
 */
export function tasksToDispatch(plan: Plan, view: StatusView, limits: DispatchLimits): string[] {
  let active = 0;
  const busyLanes = new Set<string>();
  let anyLaneFailed = false;
  for (const [wsId] of plan.workstreams) if (view.workstream(wsId) === "failed") anyLaneFailed = true;
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
    const task = plan.tasks.get(id)!;
    if (!task.dependencies.every((d) => isTaskDone(view.task(d)))) continue;
    const lane = task.workstreamId;
    const laneStatus = view.workstream(lane);
    if (LANE_CLOSED.has(laneStatus) || busyLanes.has(lane)) continue;
    const ancestorsReady = plan.ancestors.get(lane)!.every((a) => {
      const s = view.workstream(a);
      return s === "pr_open" || s === "merged";
    });
    if (!ancestorsReady) continue;
    if (!plan.upstreamWorkstreams.get(id)!.every((u) => view.workstream(u) === "merged")) continue;
    if (laneStatus === "pending" && limits.failFastOnWorkstreamError && anyLaneFailed) continue;
    chosen.push(id);
    busyLanes.add(lane);
    active++;
  }
  return chosen;
}

/** Why a pending task can never run because something failed, or null. First match wins, as in agentrelay. */
export function failureBlockReason(plan: Plan, view: StatusView, id: string): string | null {
  const task = plan.tasks.get(id)!;
  for (const dep of task.dependencies) {
    const s = view.task(dep);
    if (s === "failed" || s === "blocked") return `dependency '${dep}' failed`;
    if (s === "cancelled") return `dependency '${dep}' was cancelled`;
  }
  if (view.workstream(task.workstreamId) === "failed") return `workstream '${task.workstreamId}' failed`;
  for (const ancestor of plan.ancestors.get(task.workstreamId)!) {
    if (view.workstream(ancestor) === "failed") return `ancestor workstream '${ancestor}' failed`;
  }
  for (const upstream of plan.upstreamWorkstreams.get(id)!) {
    if (view.workstream(upstream) === "failed") return `upstream workstream '${upstream}' failed`;
  }
  return null;
}
