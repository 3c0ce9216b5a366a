/**
 * Conflicts between a workstream's integration branch and its target (`main` moved: a sibling
 * workstream merged first and changed the same lines). When the merge the engine asked for cannot
 * happen, an agent gets a resolution attempt: it merges the target into the integration branch
 * (never a rebase, never a force-push), resolves the files, runs the workstream's gates and commits;
 * then the engine asks for the merge again. At most `max_resolution_attempts` per workstream (default
 * 2; 0 leaves every conflict to a person); then, or when the budget is spent, the PR waits for a
 * person with the files named. A person who resolves first wins: the next merge simply succeeds.
 */
import { DEFAULT_RESOLUTION_ATTEMPTS } from "../graph/model.ts";
import { allowanceIn, chargeWorkstream, reserve, unreserve } from "./budget.ts";
import type { Step } from "./step.ts";
import type { EngineEvent, ResolutionRecord } from "./types.ts";

type Conflicted = Extract<EngineEvent, { type: "integration_conflicted" }>;
type Finished = Extract<EngineEvent, { type: "resolution_finished" }>;

/** How the reason of a workstream whose conflicts wait for a person begins. */
export const CONFLICTS = "conflicts with ";

const fileList = (files: string[]) =>
  files.length === 0
    ? "its files"
    : files.slice(0, 10).join(", ") + (files.length > 10 ? ` and ${files.length - 10} more` : "");

/** The integration PR conflicts: dispatch a resolution attempt, once, or leave it to a person. */
export function integrationConflicted(step: Step, event: Conflicted): void {
  const { workstream: wsId, files } = event;
  const w = step.state.workstreams[wsId];
  if (!w || w.status !== "pr_open" || w.autoMergeSkipped) return;
  const conflict = (w.conflict ??= { files, resolutions: [] });
  // A report about a merge asked before the latest resolution, or while one runs, is about a
  // conflict already being dealt with.
  if (event.resolutions !== undefined && event.resolutions !== conflict.resolutions.length) return;
  if (conflict.resolutions.at(-1)?.outcome === null) return;
  conflict.files = files;
  const def = step.plan.workstreams.get(wsId)!;
  const max =
    def.maxResolutionAttempts ??
    step.plan.graph.settings.maxResolutionAttempts ??
    DEFAULT_RESOLUTION_ATTEMPTS;
  const target = def.mergeTargetBranch;
  const allowed = allowanceIn(step, wsId, null);
  step.changed = true;
  if (conflict.resolutions.length >= max || !("capUsd" in allowed)) {
    const why =
      max === 0
        ? "resolution is off (max_resolution_attempts: 0)"
        : "capUsd" in allowed
          ? `${conflict.resolutions.length} resolution attempt(s) did not settle them`
          : "spent" in allowed
            ? allowed.spent
            : "the budget is held by running attempts";
    w.autoMergeSkipped = true;
    w.reason = `${CONFLICTS}${target} in ${fileList(files)} (${why}): merge ${target} into the integration branch by hand`;
    step.log({ type: "conflict", workstream: wsId, detail: w.reason });
    return;
  }
  const n = conflict.resolutions.length + 1;
  const record: ResolutionRecord = {
    n,
    dispatchedAt: step.at,
    outcome: null,
    reason: null,
    costUsd: null,
    turns: null,
  };
  conflict.resolutions.push(record);
  reserve(step, wsId, record, allowed.capUsd);
  step.log({
    type: "resolution",
    workstream: wsId,
    attempt: n,
    detail: `conflicts with ${target} in ${fileList(files)}`,
  });
  step.emit({
    type: "resolve_conflicts",
    key: step.key("ws", wsId, "resolve", n),
    workstream: wsId,
    n,
    files,
    ...(allowed.capUsd !== null ? { capUsd: allowed.capUsd } : {}),
  });
}

/** A resolution attempt ended: merge again (a failed one may have been overtaken by a person). */
export function resolutionFinished(step: Step, event: Finished): void {
  const w = step.state.workstreams[event.workstream];
  const record = w?.conflict?.resolutions[event.n - 1];
  if (!w || !record || record.outcome !== null) return;
  record.outcome = event.ok ? "succeeded" : "failed";
  record.reason = event.reason ?? null;
  record.turns = event.turns ?? null;
  unreserve(step, event.workstream, record);
  if (event.costUsd != null) {
    record.costUsd = event.costUsd;
    chargeWorkstream(step, event.workstream, event.costUsd);
  }
  step.changed = true;
  if (!event.ok)
    step.log({
      type: "resolution_failed",
      workstream: event.workstream,
      attempt: event.n,
      detail: record.reason ?? "failed",
    });
  step.maybeAutoMerge(event.workstream);
}

/** Asks again for the resolution a workstream has running (its answer was lost); false if none runs. */
export function resumeResolution(step: Step, wsId: string): boolean {
  const conflict = step.state.workstreams[wsId]?.conflict;
  const last = conflict?.resolutions.at(-1);
  if (!conflict || !last || last.outcome !== null) return false;
  step.emit({
    type: "resolve_conflicts",
    key: step.key("ws", wsId, "resolve", last.n),
    workstream: wsId,
    n: last.n,
    files: conflict.files,
    ...(last.capUsd != null ? { capUsd: last.capUsd } : {}),
  });
  return true;
}
