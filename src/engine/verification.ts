/**
 * Verify before landing, repair rather than refuse. Two workstreams can merge cleanly and break
 * together (one renames a function, the other adds a call to the old name): before an integration PR
 * merges, its gates (the workstream's `integration_gate`, else its tasks' gates) run on exactly the
 * tree that will land, the integration branch with its target merged in. A verification is a job
 * without an agent; it pushes the merge commit when the gates pass, so the PR then lands that very
 * tree, and the merge goes ahead only while the target and the branch are still where they were
 * (else the branch is verified again, at most `max_verifications` times). When the gates fail, a
 * repair attempt (the same job as a resolution, with an agent told what each workstream meant and
 * what failed) fixes the branch, at most `max_repair_attempts` times; past that, or with no budget
 * left, the PR waits for a person with the failing output and the commands to reproduce it.
 *
 * Landings into one target go one at a time: while a workstream's verification or repair runs, the
 * others into the same target wait, so that one's merge does not make the others' verifications stale.
 */
import { count, DEFAULT_REPAIR_ATTEMPTS, DEFAULT_VERIFICATIONS } from "../graph/model.ts";
import { resolverOf } from "../plan/resolution.ts";
import type { Plan } from "../plan/model.ts";
import { allowanceIn, chargeWorkstream, reserve, unreserve } from "./budget.ts";
import { bindJob, conflicted, newJobRecord, recordsOf, resolving } from "./conflicts.ts";
import type { RunEdit } from "./run-edit.ts";
import type { EngineEvent, LandingKind, ResolutionRecord, Verification, WorkstreamRun } from "./types.ts";

type Landing = Extract<
  EngineEvent,
  { type: "resolution_dispatched" | "resolution_started" | "resolution_lost" | "resolution_finished" }
> & { kind: LandingKind };

/** How the reason of an integration PR whose verification waits for a person begins. */
export const UNVERIFIED = "not verified: ";

/** Whether the workstream's integration PR is verified before it merges: verification on, and gates to run. */
export function verifies(plan: Plan, wsId: string): boolean {
  return repairsChecks(plan, wsId) && resolverOf(plan, { workstream: wsId }).gates.length > 0;
}

/** Repairs allowed per integration branch: the workstream's, else the graph's, else 2. */
export const maxRepairs = (plan: Plan, wsId: string): number =>
  plan.workstreams.get(wsId)!.maxRepairAttempts ??
  plan.graph.settings.maxRepairAttempts ??
  DEFAULT_REPAIR_ATTEMPTS;

/** Verifications that count against their bound (a lost job's does not). */
const counted = (records: ResolutionRecord[]) => records.filter((r) => r.outcome !== "lost").length;

/** A verification or repair of the workstream running now. */
export const verifying = (v: Verification | undefined): boolean =>
  v?.runs.at(-1)?.outcome === null || v?.repairs.at(-1)?.outcome === null;

/**
 * What a person runs to see the failure: the branch with its target merged in, then the gates. With
 * `remote` (on GitHub, `origin`), the branches are fetched from it; locally they are the repository's.
 */
export function reproduce(plan: Plan, wsId: string, remote?: string): string {
  const { branch, target, gates } = resolverOf(plan, { workstream: wsId });
  const at = (name: string) => (remote ? `${remote}/${name}` : name);
  return [
    ...(remote ? [`git fetch ${remote}`] : []),
    `git switch --detach ${at(branch)}`,
    `git merge --no-edit ${at(target)}`,
    // Each gate whole, whatever shell operators it holds.
    gates.length === 1 ? gates[0]! : gates.map((g) => `(${g})`).join(" && "),
  ].join(" && ");
}

/** "1 repair attempt", "2 repair attempts". */
/**
 * Auto-merge only when the workstream opts in and no task raised a design concern, and once the tree
 * that will land passed its gates (every integration PR is verified, auto-merged or not).
 */
export function maybeAutoMerge(step: RunEdit, wsId: string): void {
  const ws = step.workstream(wsId);
  if (ws.status !== "pr_open" || !ws.pr) return;
  const ready = readyToLand(step, wsId);
  if (!ready || ws.autoMergeSkipped) return;
  if (!step.plan.workstreams.get(wsId)!.autoMerge) return;
  const concerns = step.plan.tasksByWorkstream.get(wsId)!.some((id) => step.task(id).concerns.length > 0);
  if (concerns) {
    ws.autoMergeSkipped = true;
    step.changed = true;
    return;
  }
  step.emit({
    type: "merge_integration_pr",
    key: step.key("ws", wsId, "merge"),
    workstream: wsId,
    pr: ws.pr,
    ...(ws.conflict ? { resolutions: ws.conflict.resolutions.length } : {}),
    ...(ready.verified ? { verified: ready.verified } : {}),
  });
}

/**
 * Whether the workstream's integration PR may merge now, and what was verified: undefined while it
 * may not (a verification or repair runs or is started here, or it waits for a person or for another
 * workstream's landing); `{}` when it needs no verification.
 */
export function readyToLand(
  step: RunEdit,
  wsId: string,
): { verified?: { base: string; head: string } } | undefined {
  const { plan } = step;
  if (!verifies(plan, wsId)) return {};
  const ws = step.workstream(wsId);
  // A conflict is being resolved (its resolution runs the gates), or waits for a person.
  if (resolving(ws.conflict) || ws.conflict?.toPerson) return undefined;
  const v = ws.verification;
  if (v?.toPerson || verifying(v)) return undefined;
  if (v?.passed) return { verified: v.passed };
  if (v?.failure) {
    repair(step, wsId);
    return undefined;
  }
  if (landingElsewhere(step, wsId)) return undefined;
  verify(step, wsId);
  return undefined;
}

/** Another workstream into the same target is being verified or repaired: this one waits its turn. */
function landingElsewhere(step: RunEdit, wsId: string): boolean {
  const target = step.plan.workstreams.get(wsId)!.mergeTargetBranch;
  for (const [id, other] of Object.entries(step.state.workstreams)) {
    if (id === wsId || other.status !== "pr_open") continue;
    if (step.plan.workstreams.get(id)!.mergeTargetBranch !== target) continue;
    if (verifying(other.verification) || resolving(other.conflict)) return true;
  }
  return false;
}

/** The workstreams into `wsId`'s target that wait their turn to land are asked again. */
export function nextInLine(step: RunEdit, wsId: string): void {
  const target = step.plan.workstreams.get(wsId)!.mergeTargetBranch;
  for (const [id, other] of Object.entries(step.state.workstreams)) {
    if (id === wsId || other.status !== "pr_open") continue;
    if (step.plan.workstreams.get(id)!.mergeTargetBranch !== target) continue;
    if (!other.verification?.passed) maybeAutoMerge(step, id);
  }
}

const verificationOf = (ws: WorkstreamRun): Verification => (ws.verification ??= { runs: [], repairs: [] });

/**
 * Leaves the PR to a person, once, saying why (each host adds how to see it for themselves: the
 * commands of `reproduce`, which differ where the branches are).
 */
function toPerson(step: RunEdit, wsId: string, why: string): void {
  const ws = step.workstream(wsId);
  const v = verificationOf(ws);
  if (v.toPerson) return;
  v.toPerson = true;
  const reason = `${UNVERIFIED}${why}`;
  Object.assign(ws, { autoMergeSkipped: true, reason });
  step.log({ type: "verification_failed", workstream: wsId, detail: reason });
}

/** Starts the next verification, or leaves the PR to a person once the target moved too often. */
function verify(step: RunEdit, wsId: string): void {
  const v = verificationOf(step.workstream(wsId));
  const max = step.plan.graph.settings.maxVerifications ?? DEFAULT_VERIFICATIONS;
  const done = counted(v.runs);
  if (done >= max) {
    toPerson(
      step,
      wsId,
      `its target moved ${count(done, "time")} while it was verified (\`max_verifications: ${max}\`)`,
    );
    return;
  }
  const n = v.runs.length + 1;
  v.runs.push(newJobRecord(step, n));
  step.changed = true;
  const { branch, target } = resolverOf(step.plan, { workstream: wsId });
  step.log({ type: "verification", workstream: wsId, attempt: n, detail: `${branch} with ${target}` });
  step.emit({ type: "verify_integration", key: step.key("ws", wsId, "verify", n), workstream: wsId, n });
}

/**
 * Why the last repair ended, when it ended before its gates could judge it (its push refused, its job
 * failing): "did not fix it" alone would hide the cause from the person.
 */
function lastRepairCause(v: Verification): string {
  const last = v.repairs.at(-1);
  if (!last || last.outcome === "succeeded" || last.output || !last.reason) return "";
  const reason = last.reason.replace(/\s+/g, " ").trim();
  return `; the last ended before its gates judged it: ${reason.length > 200 ? `${reason.slice(0, 199)}…` : reason}`;
}

/** Starts the next repair of what failed, or leaves it to a person (off, used up, read-only, no budget). */
function repair(step: RunEdit, wsId: string): void {
  const { plan } = step;
  const v = verificationOf(step.workstream(wsId));
  const max = maxRepairs(plan, wsId);
  // Every repair that ended counts, a lost one too (see landingFact).
  const tried = v.repairs.filter((r) => r.outcome !== null).length;
  const resolver = resolverOf(plan, { workstream: wsId });
  const readOnly = resolver.agentTask.primaryAgent.isolation.tokenTier === "read_only";
  const allowed = tried >= max || readOnly ? null : allowanceIn(step, wsId, null);
  // Running attempts hold what is left of the budget: the reconciler asks again.
  if (allowed && "waits" in allowed) return;
  if (!allowed || !("capMicros" in allowed)) {
    const why =
      max === 0
        ? "its gates fail on the tree that would land (repair is off, `max_repair_attempts: 0`)"
        : readOnly
          ? `its gates fail on the tree that would land, and task '${resolver.agentTask.id}' is read_only, so no agent may push a repair`
          : !allowed
            ? `its gates fail on the tree that would land (${count(tried, "repair attempt")} did not fix it${lastRepairCause(v)})`
            : `its gates fail on the tree that would land (${allowed.spent})`;
    toPerson(step, wsId, why);
    return;
  }
  const n = v.repairs.length + 1;
  const record = newJobRecord(step, n);
  v.repairs.push(record);
  reserve(step, wsId, record, allowed.capMicros);
  step.changed = true;
  step.log({
    type: "repair",
    workstream: wsId,
    attempt: n,
    detail: `${resolver.branch} fails its gates with ${resolver.target}`,
  });
  step.emit({
    type: "repair_integration",
    key: step.key("ws", wsId, "repair", n),
    workstream: wsId,
    n,
    ...(allowed.capMicros !== null ? { capMicros: allowed.capMicros } : {}),
  });
}

/** The record a verification's or repair's fact is about, while the workstream's PR waits on it. */
function recordOf(step: RunEdit, event: Landing): ResolutionRecord | null {
  const ws = step.state.workstreams[event.workstream];
  if (!ws || ws.status !== "pr_open") return null;
  const record = recordsOf(step.state, { workstream: event.workstream, kind: event.kind })?.[event.n - 1];
  return record && record.outcome === null ? record : null;
}

/** A verification's or repair's job was named, started, lost or finished. */
export function landingFact(step: RunEdit, event: Landing): void {
  const record = recordOf(step, event);
  if (!record) return;
  if (event.type === "resolution_dispatched" || event.type === "resolution_started") {
    bindJob(step, record, event);
    return;
  }
  const wsId = event.workstream;
  const ws = step.workstream(wsId);
  const v = verificationOf(ws);
  step.changed = true;
  if (event.kind === "repair") unreserve(step, wsId, record);
  if (event.type === "resolution_lost") {
    // Its job vanished, and the landing is asked again. A verification's does not count; a repair's
    // agent may have spent all it could before its runner went (a runner killed again and again would
    // repair without bound): it counts against max_repair_attempts and is charged its cap.
    Object.assign(record, { outcome: "lost", reason: event.reason });
    if (event.kind === "repair" && record.capMicros != null) {
      record.costMicros = record.capMicros;
      chargeWorkstream(step, wsId, record.capMicros);
    }
    if (!step.state.cancelled) maybeAutoMerge(step, wsId);
    return;
  }
  const passed = event.ok && event.base && event.head ? { base: event.base, head: event.head } : null;
  Object.assign(record, {
    outcome: passed ? "succeeded" : "failed",
    reason: passed ? null : (event.reason ?? (event.ok ? "it did not say what it verified" : "failed")),
    turns: event.turns ?? null,
    ...(event.summary ? { summary: event.summary } : {}),
    ...(event.base ? { base: event.base } : {}),
    ...(event.head ? { head: event.head } : {}),
    ...(event.output ? { output: event.output } : {}),
  });
  if (event.kind === "repair" && event.costMicros != null) {
    record.costMicros = event.costMicros;
    chargeWorkstream(step, wsId, event.costMicros);
  }
  if (step.state.cancelled) return;
  if (passed) {
    v.passed = passed;
    v.failure = null;
    // A flaky gate lands on its pass, and a person is told of it (the summary says which).
    const flaky = event.verdict === "flaky" ? `; ${event.summary ?? "a gate is flaky"}` : "";
    step.log({
      type: "verified",
      workstream: wsId,
      attempt: event.n,
      detail: `${event.kind === "repair" ? "repaired" : "verified"} at ${passed.head.slice(0, 7)} with ${passed.base.slice(0, 7)}${flaky}`,
    });
    maybeAutoMerge(step, wsId);
    return;
  }
  step.log({
    type: event.kind === "repair" ? "repair_failed" : "verification_failed",
    workstream: wsId,
    attempt: event.n,
    detail: record.reason ?? "failed",
  });
  if (event.verdict === "workflows") toPerson(step, wsId, record.reason ?? "a person merges the target");
  else if (event.verdict === "timed_out" || event.verdict === "weakened") {
    // Not a break: a repair cannot speed a gate up, and a change to what judges the tree is a person's call.
    if (event.output) v.failure = event.output;
    toPerson(
      step,
      wsId,
      event.verdict === "timed_out"
        ? `${record.reason ?? "a gate timed out"}: a timeout, not a failure, so nothing was repaired (raise the gate's time limit or make it faster, then retry)`
        : `${record.reason ?? "a repair changed what judges it"} (its diff is below)`,
    );
  } else if (event.kind === "verify" && event.files?.length) {
    // The target moved and now conflicts: a resolution merges it (and runs the gates on the result).
    // An integration PR's conflict fails no task: there is no failure to apply.
    conflicted(step, {
      type: "integration_conflicted",
      workstream: wsId,
      files: event.files,
      resolutions: ws.conflict?.resolutions.length ?? 0,
      at: event.at,
    });
    // No agent resolves an integration PR that the engine does not merge itself: a person does.
    if (!resolving(ws.conflict) && !ws.conflict?.toPerson)
      toPerson(step, wsId, `it conflicts with its target in ${event.files.slice(0, 10).join(", ")}`);
  } else if (event.output || event.kind === "repair") {
    // The gates failed (or a repair did not fix them): the next repair is told what failed.
    if (event.output) v.failure = event.output;
    v.failure ??= record.reason ?? "the gates failed";
    repair(step, wsId);
  } else maybeAutoMerge(step, wsId); // the job failed before any gate ran: verified again, within the bound
  nextInLine(step, wsId);
}

/**
 * Integration PRs that wait to be verified or repaired and have nothing running (their turn came, a
 * budget held by running attempts was given back): asked again (the reconciler's tick).
 */
export function landingsDue(step: RunEdit): void {
  for (const [wsId, ws] of Object.entries(step.state.workstreams)) {
    if (ws.status !== "pr_open" || ws.verification?.toPerson || ws.verification?.passed) continue;
    if (verifying(ws.verification) || !verifies(step.plan, wsId)) continue;
    maybeAutoMerge(step, wsId);
  }
}

/**
 * A resolution of the integration PR that is running passed its gates on the merged tree: that tree
 * is verified (applied before the resolution's own fact, which asks for the merge again).
 */
export function resolvedAndVerified(
  step: RunEdit,
  event: Extract<EngineEvent, { type: "resolution_finished" }>,
): void {
  const { workstream: wsId, base, head } = event;
  if (!event.ok || event.task !== undefined || !base || !head || !verifies(step.plan, wsId)) return;
  const ws = step.state.workstreams[wsId];
  if (!ws || ws.conflict?.resolutions[event.n - 1]?.outcome !== null) return;
  const v = verificationOf(ws);
  v.passed = { base, head };
  v.failure = null;
  step.changed = true;
}

/** The merge found the target or the branch moved since the verification: it is verified again. */
export function unverified(step: RunEdit, wsId: string, reason: string): void {
  const ws = step.state.workstreams[wsId];
  const v = ws?.verification;
  if (!ws || ws.status !== "pr_open" || !v?.passed) return;
  v.passed = null;
  step.changed = true;
  step.log({ type: "verification", workstream: wsId, detail: `verified again: ${reason}` });
  maybeAutoMerge(step, wsId);
}

/** GitHub refuses the merge because required checks failed on `head`: repaired as a failed verification. */
export function checksFailed(step: RunEdit, wsId: string, head: string, output: string): void {
  const ws = step.state.workstreams[wsId];
  if (!ws || ws.status !== "pr_open" || !repairsChecks(step.plan, wsId)) return;
  const v = verificationOf(ws);
  if (v.toPerson || verifying(v) || v.checksFailed === head) return;
  Object.assign(v, { checksFailed: head, passed: null, failure: output });
  step.changed = true;
  step.log({ type: "verification_failed", workstream: wsId, detail: "required checks failed" });
  repair(step, wsId);
}

/** Required checks that fail on an integration branch are repaired whenever verification is on, gates or not. */
export const repairsChecks = (plan: Plan, wsId: string): boolean =>
  plan.workstreams.get(wsId)!.verifyIntegration ?? plan.graph.settings.verifyIntegration ?? true;

/** Verifications and repairs that did not report before their deadline fail (the reconciler's tick). */
export function landingDeadlines(step: RunEdit): void {
  for (const workstream of Object.keys(step.state.workstreams)) {
    for (const kind of ["verify", "repair"] as const) {
      const record = recordsOf(step.state, { workstream, kind })?.at(-1);
      if (record?.outcome !== null || record.deadline === undefined || step.at < record.deadline) continue;
      landingFact(step, {
        type: "resolution_finished",
        workstream,
        kind,
        n: record.n,
        ok: false,
        reason: `the ${kind === "verify" ? "verification" : "repair"} did not report before its deadline`,
        at: step.at,
      });
    }
  }
}
