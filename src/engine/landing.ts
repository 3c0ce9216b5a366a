/**
 * Where an open integration PR stands on its way to landing, worked out once for everything people
 * read (the status comment's lines, rows and chart, the PR body, the local report), so that they never
 * disagree. The order follows what the engine does (verification.ts): a conflict is settled first,
 * then the tree that will land is verified (and repaired), and only then is the PR merged, by the app
 * or by a person. A PR is offered to a person to merge only once it may land: while it waits to be
 * verified, it is in the queue, and what will then keep it from merging itself (`auto_merge: false`,
 * a design concern) is said meanwhile.
 */
import type { Plan } from "../plan/model.ts";
import { resolving } from "./conflicts.ts";
import type { RunState } from "./types.ts";
import { verifies, verifying } from "./verification.ts";

/** Why a PR that may land is left to a person to merge. */
export type MergeBy = "auto_merge_off" | "concern" | "auto_merge_failed";

export type LandingStage =
  /** An agent resolves its conflicts with its target. */
  | { stage: "resolving" }
  /** Its conflicts are left to a person. */
  | { stage: "conflict" }
  /** Verification or repair gave up: a person fixes the branch or closes the PR; it is not to be merged. */
  | { stage: "unverified" }
  /** A verification or a repair of it runs. */
  | { stage: "verifying"; job: "verification" | "repair"; then: MergeBy | null }
  /** To be verified (or repaired) once another landing into its target is done. */
  | { stage: "in_turn"; then: MergeBy | null }
  /** It may land, and waits for a person to merge it. */
  | { stage: "merge"; by: MergeBy }
  /** It may land, and the app merges it once GitHub's required checks pass. */
  | { stage: "merging" };

/** The tasks of a workstream that raised a design concern, in plan order. */
export const concernsIn = (plan: Plan, state: RunState, wsId: string): string[] =>
  (plan.tasksByWorkstream.get(wsId) ?? []).filter((id) => state.tasks[id]!.concerns.length > 0);

/** What keeps a PR from merging itself once it may land (null: nothing, the app merges it). */
function mergeBy(plan: Plan, state: RunState, wsId: string): MergeBy | null {
  if (!plan.workstreams.get(wsId)!.autoMerge) return "auto_merge_off";
  if (concernsIn(plan, state, wsId).length > 0) return "concern";
  return state.workstreams[wsId]!.autoMergeSkipped ? "auto_merge_failed" : null;
}

/** Where the workstream's integration PR stands (null: it has none open). */
export function landingStage(plan: Plan, state: RunState, wsId: string): LandingStage | null {
  const ws = state.workstreams[wsId]!;
  if (ws.status !== "pr_open") return null;
  if (resolving(ws.conflict)) return { stage: "resolving" };
  if (ws.conflict?.toPerson) return { stage: "conflict" };
  const v = ws.verification;
  if (v?.toPerson) return { stage: "unverified" };
  const then = mergeBy(plan, state, wsId);
  if (verifying(v))
    return { stage: "verifying", job: v?.repairs.at(-1)?.outcome === null ? "repair" : "verification", then };
  if (verifies(plan, wsId) && !v?.passed) return { stage: "in_turn", then };
  return then ? { stage: "merge", by: then } : { stage: "merging" };
}

/** The stages where a person must act on the PR (merge it, resolve it, or fix its branch). */
export const PERSON_STAGES: ReadonlySet<LandingStage["stage"]> = new Set(["conflict", "unverified", "merge"]);

/** The workstream's integration PR waits for a person. */
export function landingWaitsForPerson(plan: Plan, state: RunState, wsId: string): boolean {
  const stage = landingStage(plan, state, wsId);
  return stage !== null && PERSON_STAGES.has(stage.stage);
}
