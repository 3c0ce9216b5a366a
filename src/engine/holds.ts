/**
 * What each task that is not done waits for, named so that a person can act on it: a failure to retry
 * (blocked tasks name the failure at their root), a PR whose conflict or merge waits for a person, a
 * spent budget, or its turn behind work that moves on its own (running jobs, PRs GitHub merges,
 * agents resolving conflicts, free slots). Each task is held by exactly one thing, so that counts per
 * cause add up to the tasks that wait: a task that waits for several is counted under the first that
 * a person must act on (a PR before a budget: raising the budget alone would not start it).
 *
 * A task to do waits for its dependencies, its workstream's running task, its parent workstream's PR,
 * the workstreams whose tasks it depends on and, where overlaps are serialised, the workstream of the
 * earlier task of its pair (see plan/readiness.ts); what holds those holds it.
 */
import { ancestorsOf, type Plan } from "../plan/model.ts";
import { isTaskTerminal } from "../plan/readiness.ts";
import { type Root, rootCauses } from "./blocking.ts";
import { leftToPerson } from "./conflicts.ts";
import { landingWaitsForPerson } from "./landing.ts";
import type { RunState } from "./types.ts";

/** A PR a person must merge or resolve: a task's PR (its conflicts), or a workstream's integration PR. */
export type PersonPr = { task: string } | { workstream: string };

export type Hold =
  /** Running, or a PR being opened or merged, or an agent resolving its conflicts. */
  | { kind: "at_work" }
  /** Failed or cancelled: a person retries it. */
  | { kind: "failed" }
  | { kind: "blocked"; root: Root }
  | { kind: "person"; pr: PersonPr }
  /** A spent budget (`run`, `workstream:<id>`, `task:<id>`). */
  | { kind: "budget"; scope: string }
  /** A serialised overlap (`overlaps: serialize`): the earlier task's workstream landing, which moves on its own. */
  | { kind: "overlap"; workstream: string; task: string }
  /** Its turn: it waits for work that moves on its own. */
  | { kind: "turn" };

const AT_WORK: Hold = { kind: "at_work" };
const TURN: Hold = { kind: "turn" };

/** A hold as a key, to group tasks by what holds them: `pr:task:x`, `budget:run`, `turn`. */
export function holdKey(hold: Hold): string {
  switch (hold.kind) {
    case "person":
      return "task" in hold.pr ? `pr:task:${hold.pr.task}` : `pr:workstream:${hold.pr.workstream}`;
    case "budget":
      return `budget:${hold.scope}`;
    case "overlap":
      return `overlap:${hold.workstream}`;
    case "blocked":
      return "task" in hold.root
        ? `blocked:task:${hold.root.task}`
        : `blocked:workstream:${hold.root.workstream}`;
    default:
      return hold.kind;
  }
}

/**
 * Of what holds a task, the one it is counted under: a person's PR, then a budget, then a serialised
 * overlap (named, since nothing else says why the task does not start), then its turn.
 */
function first(holds: Hold[]): Hold {
  return (
    holds.find((h) => h.kind === "person") ??
    holds.find((h) => h.kind === "budget") ??
    holds.find((h) => h.kind === "overlap") ??
    TURN
  );
}

/**
 * The integration PR of a workstream waits for a person: verified and not merged by the app (no
 * auto-merge, a concern), a conflict left to one, or a verification given up (landing.ts). A PR still to
 * be verified waits its turn, not for a person.
 */
export const mergeWaitsForPerson = landingWaitsForPerson;

/**
 * The workstreams in an order where each comes after those it waits for: its parent, those its tasks
 * depend on, and those its tasks wait for to land by a serialised overlap (the graph's validation
 * refuses cycles among the first two, the plan serialises no pair that would close one; any left are
 * put last).
 */
function workstreamOrder(plan: Plan): string[] {
  const after = new Map<string, Set<string>>([...plan.workstreams.keys()].map((w) => [w, new Set<string>()]));
  for (const ws of plan.graph.workstreams) if (ws.parentId) after.get(ws.id)!.add(ws.parentId);
  for (const id of plan.order) {
    const ws = plan.tasks.get(id)!.workstreamId;
    for (const up of plan.upstreamWorkstreams.get(id)!) if (up !== ws) after.get(ws)!.add(up);
    for (const earlier of plan.serialAfter.get(id) ?? []) after.get(ws)!.add(earlier.workstream);
  }
  const order: string[] = [];
  const placed = new Set<string>();
  for (let progress = true; progress;) {
    progress = false;
    for (const [ws, needs] of after) {
      if (placed.has(ws) || [...needs].some((n) => !placed.has(n))) continue;
      placed.add(ws);
      order.push(ws);
      progress = true;
    }
  }
  return [...order, ...[...after.keys()].filter((w) => !placed.has(w))];
}

/**
 * What holds each task that is not done (merged and completed tasks have no entry). Workstreams are
 * worked out in the order they wait for each other, and each one's tasks in plan order, so that what a
 * task waits for is known when it is reached.
 */
export function holds(plan: Plan, state: RunState): Map<string, Hold> {
  const spent = state.budget?.spent ?? {};
  const roots = rootCauses(plan, state).tasks;
  const result = new Map<string, Hold>();
  const workstreamHolds = new Map<string, Hold>();
  const unfinished = (id: string) => {
    const s = state.tasks[id]!.status;
    return s !== "merged" && s !== "completed";
  };
  /** The hold of a task that is not pending: what it is doing, or what broke it. */
  const ownHold = (id: string): Hold | null => {
    const t = state.tasks[id]!;
    if (t.status === "running") return AT_WORK;
    if (t.status === "pr_open") return leftToPerson(t) ? { kind: "person", pr: { task: id } } : AT_WORK;
    if (t.status === "failed" || t.status === "cancelled") return { kind: "failed" };
    if (t.status === "blocked") {
      const root = roots.get(id);
      return root ? { kind: "blocked", root } : TURN;
    }
    return null;
  };
  const ancestors = new Map<string, string[]>();
  const ancestorsOfWs = (ws: string) => {
    let list = ancestors.get(ws);
    if (!list) ancestors.set(ws, (list = [...ancestorsOf(plan, ws)]));
    return list;
  };
  /** What waits for a workstream waits for its integration PR, or else for its unfinished tasks. */
  const ofWorkstream = (wsId: string): Hold | null => {
    const ws = state.workstreams[wsId]!;
    if (ws.status === "merged" || ws.status === "failed") return null;
    if (ws.status === "pr_open")
      return mergeWaitsForPerson(plan, state, wsId) ? { kind: "person", pr: { workstream: wsId } } : AT_WORK;
    if (ws.status === "merge_ready") return AT_WORK;
    return workstreamHolds.get(wsId) ?? TURN;
  };
  const pendingHold = (id: string): Hold => {
    const task = plan.tasks.get(id)!;
    const ws = state.workstreams[task.workstreamId]!;
    const found: Hold[] = [];
    for (const dep of task.dependencies) {
      const hold = result.get(dep);
      if (hold) found.push(hold);
    }
    if (ws.activeTask !== null && ws.activeTask !== id) found.push(result.get(ws.activeTask) ?? AT_WORK);
    for (const anc of ancestorsOfWs(task.workstreamId)) {
      const s = state.workstreams[anc]!.status;
      if (s === "pr_open" || s === "merged") continue;
      const hold = ofWorkstream(anc);
      if (hold) found.push(hold);
    }
    for (const up of plan.upstreamWorkstreams.get(id)!) {
      const hold = state.workstreams[up]!.status === "merged" ? null : ofWorkstream(up);
      if (hold) found.push(hold);
    }
    // A serialised overlap: the earlier task's workstream landing (or, failed, the earlier task over).
    for (const earlier of plan.serialAfter.get(id) ?? []) {
      const hold =
        state.workstreams[earlier.workstream]!.status !== "failed"
          ? ofWorkstream(earlier.workstream)
          : isTaskTerminal(state.tasks[earlier.task]!.status)
            ? null
            : (result.get(earlier.task) ?? ownHold(earlier.task) ?? TURN);
      // What moves on its own there is said as the overlap it is (a person's part stays theirs).
      if (hold)
        found.push(hold.kind === "at_work" || hold.kind === "turn" ? { kind: "overlap", ...earlier } : hold);
    }
    // A spent budget of its own holds it too, behind work that moves (it could not start after it);
    // with nothing at all, it waits for its turn (a free slot).
    const scope = [`task:${id}`, `workstream:${task.workstreamId}`, "run"].find(
      (s) => spent[s] !== undefined,
    );
    if (scope) found.push({ kind: "budget", scope });
    return first(found);
  };
  for (const wsId of workstreamOrder(plan)) {
    const ids = plan.tasksByWorkstream.get(wsId) ?? [];
    for (const id of ids) {
      if (!unfinished(id)) continue;
      const own = ownHold(id);
      if (own) result.set(id, own);
    }
    const parts: Hold[] = [];
    for (const id of ids) {
      if (!unfinished(id)) continue;
      if (state.tasks[id]!.status === "pending") result.set(id, pendingHold(id));
      parts.push(result.get(id)!);
    }
    workstreamHolds.set(wsId, first(parts));
  }
  return result;
}

/** Pending tasks counted under what holds them, by holdKey, in plan order. */
export function waiting(plan: Plan, state: RunState, all = holds(plan, state)): Map<string, string[]> {
  const byKey = new Map<string, string[]>();
  for (const id of plan.order) {
    if (state.tasks[id]!.status !== "pending") continue;
    const key = holdKey(all.get(id) ?? TURN);
    const ids = byKey.get(key);
    if (ids) ids.push(id);
    else byKey.set(key, [id]);
  }
  return byKey;
}
