/**
 * Lands a workstream's verified integration on its target (the engine's `merge_integration_pr`): the
 * tree that lands must be the one the gates verified, by a fast-forward where the app may move the
 * target, else by merging the integration PR; a landing whose answer was lost, or that another replica
 * already made, is recognised (`landedPr`, `targetSince`), never made twice.
 */
import type { EngineEffect, EngineEvent } from "../engine/types.ts";
import { repairsChecks } from "../engine/verification.ts";
import type { Plan } from "../plan/model.ts";
import type { RepoContext } from "./client.ts";
import { fastForward, targetMoved, targetSince } from "./fast-forward.ts";
import type { Merged, Merges } from "./merges.ts";
import { landedPr } from "./open-pr.ts";

/** What landing needs of the effects of its repository; `waited` records the wait a merge's answer says. */
export interface LandingSide {
  ctx: RepoContext;
  merges: Merges;
  waited(answer: Merged): void;
}

export async function landIntegration(
  on: LandingSide,
  plan: Plan,
  effect: Extract<EngineEffect, { type: "merge_integration_pr" }>,
  branch: string,
  at: number,
): Promise<EngineEvent[]> {
  const target = plan.workstreams.get(effect.workstream)!.mergeTargetBranch;
  const { verified } = effect;
  const title = `Integrate workstream ${effect.workstream}`;
  const again = async (reason: string): Promise<EngineEvent[]> => {
    const landed = await landedPr(on.ctx, branch, target);
    if (landed) return [{ type: "integration_pr_merged", workstream: effect.workstream, at, ...landed }];
    return [{ type: "integration_unverified", workstream: effect.workstream, reason, at }];
  };
  // The tree that lands must be the one verified: the target where it was (or its PR merged, `again`;
  // or moved to this pair's landing, whose answer was lost). Where the app may move the target, a
  // fast-forward that GitHub refuses once it moved lands it (fast-forward.ts).
  const since = verified ? await targetSince(on.ctx, target, verified) : null;
  if (since && "moved" in since) return again(since.moved);
  const landing =
    since ??
    (verified && (await on.merges.policy(target)).directUpdate
      ? await fastForward(on.ctx, target, branch, verified, title)
      : null);
  if (landing && "landed" in landing) {
    on.waited("merged");
    on.merges.mergedInto.set(target, landing.landed);
    return [{ type: "integration_pr_merged", workstream: effect.workstream, at, commit: landing.landed }];
  }
  if (landing && "moved" in landing) return again(landing.moved);
  if (landing) on.ctx.log(`${target} not fast-forwarded to ${branch} (${landing.refused}): merging its PR`);
  const merged = await on.merges.merge(effect.pr, title, target, branch, verified?.head);
  on.waited(merged);
  // A merge GitHub refused (strict required checks: the head is no longer up to date; the base
  // modified during the merge) because the target moved since the check: verified again.
  const refusedMoved =
    verified &&
    (merged === "base_moved" || (typeof merged === "object" && "wait" in merged)) &&
    (await targetMoved(on.ctx, target, verified.base));
  if (refusedMoved) return again(refusedMoved);
  if (merged === "merged") {
    const landed = on.merges.mergedInto.get(target);
    // Never silently: a target that moved between the check and the merge is said, at once.
    const unverified =
      verified && landed && !(await on.merges.landedAsVerified(landed, verified))
        ? `${target} moved between the check and the merge: ${landed.slice(0, 7)} holds a tree nobody verified (the gates passed with ${target} at ${verified.base.slice(0, 7)}); run the gates on ${target}`
        : undefined;
    // What landed, for a task in another repository that depends on this workstream (landed.json).
    return [
      {
        type: "integration_pr_merged",
        workstream: effect.workstream,
        at,
        ...(landed ? { commit: landed } : {}),
        ...(unverified ? { unverified } : {}),
      },
    ];
  }
  if (merged === "moved") return again("its branch moved since it was verified");
  if (typeof merged === "object" && "failedOn" in merged && repairsChecks(plan, effect.workstream)) {
    // GitHub refuses the merge for a required check that failed on the head: it is repaired.
    const head = merged.failedOn!;
    const output = await on.merges.failedChecks(target, head);
    return [
      {
        type: "integration_checks_failed",
        workstream: effect.workstream,
        head,
        output: output ?? merged.reason,
        at,
      },
    ];
  }
  if (merged === "closed") return [{ type: "integration_pr_closed", workstream: effect.workstream, at }];
  if (merged === "conflicted") {
    const echo = effect.resolutions !== undefined ? { resolutions: effect.resolutions } : {};
    return [{ type: "integration_conflicted", workstream: effect.workstream, files: [], ...echo, at }];
  }
  return typeof merged === "string" || "wait" in merged
    ? []
    : [{ type: "integration_merge_failed", workstream: effect.workstream, reason: merged.reason, at }];
}
