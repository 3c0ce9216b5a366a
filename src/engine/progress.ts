/**
 * Where a run stands, as people need it at any size: whether it moves on its own, what waits for a
 * budget and what for a person, and for each thing that broke, what it holds back. Pure projections
 * of the plan and the state, for what people read (the status comment, the local report).
 */
import { count as countOf, thousands } from "../graph/model.ts";
import type { Plan } from "../plan/model.ts";
import { type Root, rootCauses, rootText } from "./blocking.ts";
import { leftToPerson } from "./conflicts.ts";
import { landingWaitsForPerson } from "./landing.ts";
import type { RunState, TaskStatus, WorkstreamStatus } from "./types.ts";

/** Task statuses in words, in the order counts are given. */
export const STATUS_WORDS: Record<TaskStatus, string> = {
  running: "running",
  pr_open: "PR open",
  failed: "failed",
  blocked: "blocked",
  cancelled: "cancelled",
  pending: "to do",
  merged: "merged",
  completed: "done without changes",
};

/** Workstream statuses in words. */
export const WORKSTREAM_WORDS: Record<WorkstreamStatus, string> = {
  pending: "not started",
  active: "active",
  merge_ready: "opening its PR",
  pr_open: "PR open",
  merged: "merged",
  failed: "failed",
};

/** "1,234": counts as people read them. */
export const count = (n: number): string => thousands(n);

/** "1 task", "4,913 tasks" (the graph's own messages count the same way). */
export const plural = countOf;

/** What one root failure holds back. */
export interface Breakage {
  root: Root;
  /** "task 'x' failed", "workstream 'w' failed". */
  text: string;
  /** Why, in the failed task's or workstream's own words. */
  reason: string | null;
  /** The blocked tasks it is the root of, in plan order. */
  blocked: string[];
}

export interface Standing {
  /** The run's state in words: "running", "waiting for budget and for you", "done with failures". */
  phase: string;
  /** A job, a resolution, or a PR GitHub is opening or merging: the run moves without anyone. */
  moving: boolean;
  /** A person must act: a failure to retry, a PR to review or merge, a conflict to resolve by hand. */
  forYou: boolean;
  /** Failures with what they block, the most blocking first; then cancelled tasks that block work. */
  breakages: Breakage[];
  /** A spent budget holds work back (which work: holds.ts). */
  waitsForBudget: boolean;
  /** Blocked tasks of which no root was found (none in a consistent state). */
  unexplained: string[];
}

const rootKey = (root: Root) => ("task" in root ? `task:${root.task}` : `workstream:${root.workstream}`);

/** The failures of a run, each with the blocked tasks it is the root of. */
export function breakages(plan: Plan, state: RunState): { list: Breakage[]; unexplained: string[] } {
  const roots = rootCauses(plan, state).tasks;
  const byRoot = new Map<string, Breakage>();
  const add = (root: Root, reason: string | null) =>
    byRoot.set(rootKey(root), { root, text: rootText(root, state), reason, blocked: [] });
  for (const id of plan.order) {
    const t = state.tasks[id]!;
    if (t.status === "failed") add({ task: id }, t.reason);
  }
  for (const [wsId] of plan.workstreams) {
    const ws = state.workstreams[wsId]!;
    if (ws.status === "failed" && ws.failedItself) add({ workstream: wsId }, ws.reason);
  }
  const unexplained: string[] = [];
  for (const id of plan.order) {
    if (state.tasks[id]!.status !== "blocked") continue;
    const root = roots.get(id);
    if (!root) {
      unexplained.push(id);
      continue;
    }
    const key = rootKey(root);
    if (!byRoot.has(key)) add(root, state.tasks["task" in root ? root.task : ""]?.reason ?? null);
    byRoot.get(key)!.blocked.push(id);
  }
  // Failures first (a cancelled task was stopped on purpose), the most blocking first, then plan order.
  const cancelled = (b: Breakage) =>
    "task" in b.root && state.tasks[b.root.task]!.status === "cancelled" ? 1 : 0;
  const list = [...byRoot.values()].sort(
    (a, b) => cancelled(a) - cancelled(b) || b.blocked.length - a.blocked.length,
  );
  return { list, unexplained };
}

/**
 * Whether a spent budget holds work back: some task still to do is in its scope (the run's, its
 * workstream's or its own). What waits for such a task waits for the budget too, but it only adds to
 * a budget that holds something already, so the scope's own tasks decide.
 */
function waitsForBudget(plan: Plan, state: RunState): boolean {
  const spent = Object.keys(state.budget?.spent ?? {});
  if (spent.length === 0) return false;
  return plan.order.some((id) => {
    if (state.tasks[id]!.status !== "pending") return false;
    const scopes = ["run", `task:${id}`, `workstream:${plan.tasks.get(id)!.workstreamId}`];
    return spent.some((scope) => scopes.includes(scope));
  });
}

/** Whether the run moves on its own, and whether a person must act, besides budgets. */
function activity(plan: Plan, state: RunState): { moving: boolean; forYou: boolean } {
  let moving = false;
  let forYou = false;
  for (const id of plan.order) {
    const t = state.tasks[id]!;
    if (t.status === "running") moving = true;
    else if (t.status === "pr_open") {
      if (leftToPerson(t)) forYou = true;
      else moving = true; // being opened, merged, or resolved by an agent
    } else if (t.status === "failed") forYou = true;
  }
  for (const [wsId] of plan.workstreams) {
    const ws = state.workstreams[wsId]!;
    if (ws.integration === "opening" || ws.preparation === "requested") moving = true;
    if (ws.status !== "pr_open") continue;
    if (landingWaitsForPerson(plan, state, wsId)) forYou = true;
    else moving = true;
  }
  return { moving, forYou };
}

const OUTCOME_WORDS = {
  succeeded: "done",
  completed_with_failures: "done with failures",
  cancelled: "cancelled",
};

/** Where the run stands. */
export function standing(plan: Plan, state: RunState): Standing {
  const { list, unexplained } = breakages(plan, state);
  const budget = !state.outcome && !state.cancelled && waitsForBudget(plan, state);
  const { moving, forYou } = activity(plan, state);
  let phase: string;
  if (state.outcome) phase = OUTCOME_WORDS[state.outcome];
  else if (state.cancelled) phase = "cancelling";
  else {
    const waits = [...(budget ? ["budget"] : []), ...(forYou ? ["you"] : [])];
    const waiting = waits.length ? `waiting for ${waits.join(" and for ")}` : "";
    phase = [moving || !waiting ? "running" : "", waiting].filter(Boolean).join(", ");
  }
  return { phase, moving, forYou, breakages: list, waitsForBudget: budget, unexplained };
}

/** Task counts in words, most pressing first: "8 running, 9 failed, 4,913 blocked, 70 merged". */
export function statusCounts(state: RunState): string {
  const counts = new Map<TaskStatus, number>();
  for (const t of Object.values(state.tasks)) counts.set(t.status, (counts.get(t.status) ?? 0) + 1);
  return (Object.keys(STATUS_WORDS) as TaskStatus[])
    .filter((s) => counts.has(s))
    .map((s) => `${count(counts.get(s)!)} ${STATUS_WORDS[s]}`)
    .join(", ");
}
