/**
 * Conflicts of the merges the engine asks for: a task PR into its integration branch, an integration
 * PR into its target (`main` moved: a sibling workstream merged first and changed the same lines).
 * When such a merge cannot happen, an agent gets a resolution attempt: it merges the branch merged
 * into into the PR's branch (never a rebase, never a force-push), resolves the files, runs the gates
 * and commits; then the engine asks for the merge again. At most `max_resolution_attempts` per PR
 * (task, workstream or graph; default 2; 0 keeps the behaviour from before resolutions: a task PR's
 * conflict fails the task, an integration PR's waits for a person). Past the bound, or when the budget
 * is spent, the PR waits for a person with the files named. A person who resolves first wins: the next
 * merge simply succeeds.
 */
import { DEFAULT_RESOLUTION_ATTEMPTS, thousands } from "../graph/model.ts";
import { maxResolutions, type ResolutionSubject, resolverOf, subjectOf } from "../plan/resolution.ts";
import { allowanceIn, chargeWorkstream, reserve, unreserve } from "./budget.ts";
import type { RunEdit } from "./run-edit.ts";
import type { Plan } from "../plan/model.ts";
import type { Conflict, EngineEvent, ResolutionRecord, RunState, TaskRun } from "./types.ts";

type Conflicted = Extract<EngineEvent, { type: "integration_conflicted" | "task_conflicted" }>;
type About = Extract<
  EngineEvent,
  { type: "resolution_dispatched" | "resolution_started" | "resolution_lost" | "resolution_finished" }
>;

/** How long a conflict's list of files may run in its reason: the sentence after it must fit a line. */
const FILE_LIST_CHARS = 120;

/**
 * The files of a conflict, as code: "`a.py`, `b.py` and 12 more", as many named as fit in
 * FILE_LIST_CHARS (the first always, at most ten), so that a reason stays a sentence a line can hold
 * whole, whatever the files' number and length: the clone, or the PR's files tab, has the rest.
 */
const fileList = (files: string[]) => {
  if (files.length === 0) return "its files";
  const named: string[] = [];
  let length = 0;
  for (const f of files.slice(0, 10)) {
    const shown = `\`${f}\``;
    if (named.length > 0 && length + shown.length + 2 > FILE_LIST_CHARS) break;
    named.push(shown);
    length += shown.length + 2;
  }
  const more = files.length - named.length;
  return named.join(", ") + (more > 0 ? ` and ${thousands(more)} more` : "");
};

/** Resolutions that count against the bound (a lost job's does not). */
const counted = (conflict: Conflict) => conflict.resolutions.filter((r) => r.outcome !== "lost").length;

/** The record a subject's conflict is kept on, if the subject still waits on that merge. */
function holderOf(step: RunEdit, subject: ResolutionSubject) {
  if (subject.task !== undefined) {
    if (!step.plan.tasks.has(subject.task)) return null;
    const t = step.task(subject.task);
    return { record: t, open: t.status === "pr_open" && t.pr !== null };
  }
  const w = step.state.workstreams[subject.workstream];
  return w ? { record: w, open: w.status === "pr_open" && !w.autoMergeSkipped } : null;
}

/** A task that fails on its conflict, and why: what `conflicted` decides when resolution is off. */
export interface ConflictFailure {
  task: string;
  reason: string;
}

/**
 * A merge conflicts: dispatch a resolution attempt, once, or leave it to a person; or, with resolution
 * off, the task PR's task fails (returned, for the caller to fail it).
 */
export function conflicted(step: RunEdit, event: Conflicted): ConflictFailure | null {
  const { plan } = step;
  if (event.type === "task_conflicted" && !plan.tasks.has(event.task)) return null;
  const subject: ResolutionSubject =
    event.type === "task_conflicted"
      ? { workstream: plan.tasks.get(event.task)!.workstreamId, task: event.task }
      : { workstream: event.workstream };
  const { task } = subject;
  const holder = holderOf(step, subject);
  if (!holder?.open) return null;
  const resolver = resolverOf(plan, subject);
  const max = maxResolutions(plan, subject, DEFAULT_RESOLUTION_ATTEMPTS);
  const { files } = event;
  if (max === 0 && task !== undefined) {
    // Resolution off: the task fails on its conflict, as it did before resolutions existed.
    const reason = `merging the task PR failed: it has conflicts with \`${resolver.target}\` in ${fileList(files)}`;
    return { task, reason };
  }
  // A report about a merge asked before the latest resolution, or while one runs, is about a
  // conflict already being dealt with; one left to a person was said once.
  const known = holder.record.conflict;
  if (event.resolutions !== undefined && event.resolutions !== (known?.resolutions.length ?? 0)) return null;
  if (known && (resolving(known) || known.toPerson)) return null;
  const readOnly = resolver.agentTask.primaryAgent.isolation.tokenTier === "read_only";
  const tried = known ? counted(known) : 0;
  // No agent may resolve it (off, read-only, tried enough): the budget does not matter.
  const allowed = tried >= max || readOnly ? null : allowanceIn(step, subject.workstream, task ?? null);
  // Running attempts hold what is left of the budget: the reconciler's next merge asks again.
  if (allowed && "waits" in allowed) return null;
  const conflict = (holder.record.conflict ??= { files, resolutions: [] });
  // GitHub does not say which files conflict; a resolution that found them keeps them.
  if (files.length > 0) conflict.files = files;
  step.changed = true;
  if (!allowed || !("capMicros" in allowed)) {
    const why =
      max === 0
        ? "resolution is off, `max_resolution_attempts: 0`"
        : readOnly
          ? `task '${resolver.agentTask.id}' is read_only, so no agent may push a resolution`
          : !allowed
            ? `${tried} resolution attempt${tried === 1 ? "" : "s"} did not settle them`
            : allowed.spent;
    // The markers were cleared but the merged result failed its gates: that is the cause, not the conflict.
    const last = conflict.resolutions.filter((r) => r.outcome === "failed").at(-1)?.reason ?? "";
    const cause = / were resolved, but /.test(last)
      ? last
      : /the gate (failed|timed out)/.test(last)
        ? `the conflicts in ${fileList(conflict.files)} were resolved, but the merged result fails its gates: ${last}`
        : `they conflict in ${fileList(conflict.files)}`;
    // What to do first, so that a cut line keeps the branches to merge.
    const reason = `merge \`${resolver.target}\` into \`${resolver.branch}\` by hand: ${cause} (${why})`;
    conflict.toPerson = true;
    if (task !== undefined) step.task(task).reason = reason;
    else Object.assign(step.workstream(subject.workstream), { autoMergeSkipped: true, reason });
    step.log({ type: "conflict", workstream: subject.workstream, ...(task ? { task } : {}), detail: reason });
    return null;
  }
  const n = conflict.resolutions.length + 1;
  const record = newJobRecord(step, n);
  conflict.resolutions.push(record);
  reserve(step, subject.workstream, record, allowed.capMicros);
  step.log({
    type: "resolution",
    workstream: subject.workstream,
    ...(task ? { task } : {}),
    attempt: n,
    detail: `conflicts with \`${resolver.target}\` in ${fileList(conflict.files)}`,
  });
  step.emit({
    type: "resolve_conflicts",
    key: resolutionKey(step, subject, n),
    ...subject,
    n,
    files: conflict.files,
    ...(allowed.capMicros !== null ? { capMicros: allowed.capMicros } : {}),
  });
  return null;
}

const resolutionKey = (step: RunEdit, subject: ResolutionSubject, n: number) =>
  subject.task !== undefined
    ? step.key(subject.task, "resolve", n)
    : step.key("ws", subject.workstream, subject.kind ?? "resolve", n);

/** The record of job `n` of a resolution (or a verification, or a repair), dispatched now, with its deadline. */
export const newJobRecord = (step: RunEdit, n: number): ResolutionRecord => ({
  n,
  dispatchedAt: step.at,
  deadline: step.at + step.state.settings.attemptTimeoutMs,
  job: null,
  startedAt: null,
  outcome: null,
  reason: null,
  costMicros: null,
  turns: null,
});

/** A job named for a running record (`resolution_dispatched`), or started by it: recorded once. */
export function bindJob(
  step: RunEdit,
  record: ResolutionRecord,
  event: Extract<EngineEvent, { type: "resolution_dispatched" | "resolution_started" }>,
): void {
  if (event.type === "resolution_dispatched") {
    if (record.job || record.startedAt) return;
    record.job = event.job;
    step.changed = true;
    step.quiet = true;
    return;
  }
  // Once, and only by the job dispatched for it: the app mints the job's token only then.
  if (record.startedAt || (record.job && event.job !== record.job)) return;
  record.startedAt = event.at;
  if (event.job) record.job = event.job;
  step.changed = true;
}

/**
 * A resolution's job was named, started, lost or finished: recorded once, for the running one. Returns
 * the subject whose merge is asked again once it ended (the caller asks: a failed resolution may have
 * been overtaken by a person), or null.
 */
export function resolutionFact(step: RunEdit, event: About): ResolutionSubject | null {
  const subject = subjectOf(event);
  const holder = holderOf(step, subject);
  const record = holder?.record.conflict?.resolutions[event.n - 1];
  if (!holder || !record || record.outcome !== null) return null;
  switch (event.type) {
    case "resolution_dispatched":
    case "resolution_started":
      bindJob(step, record, event);
      return null;
    case "resolution_lost":
    case "resolution_finished": {
      const lost = event.type === "resolution_lost";
      record.outcome = lost ? "lost" : event.ok ? "succeeded" : "failed";
      record.reason = event.reason ?? null;
      unreserve(step, subject.workstream, record);
      if (!lost && event.files?.length) holder.record.conflict!.files = event.files;
      if (!lost) {
        record.turns = event.turns ?? null;
        if (event.summary) record.summary = event.summary;
        if (event.costMicros != null) {
          record.costMicros = event.costMicros;
          chargeWorkstream(step, subject.workstream, event.costMicros);
        }
      }
      step.changed = true;
      if (!lost && !event.ok)
        step.log({
          type: "resolution_failed",
          workstream: subject.workstream,
          ...(subject.task !== undefined ? { task: subject.task } : {}),
          attempt: event.n,
          detail: record.reason ?? "failed",
        });
      // A gate that timed out, a resolution that changed what judges it, or a target whose workflow
      // change no push of ours may bring: another attempt would not settle it; a person hears the cause.
      if (
        !lost &&
        !event.ok &&
        event.verdict &&
        ["timed_out", "weakened", "workflows"].includes(event.verdict)
      ) {
        const conflict = holder.record.conflict!;
        conflict.toPerson = true;
        const reason = `merge \`${resolverOf(step.plan, subject).target}\` into \`${resolverOf(step.plan, subject).branch}\` by hand: ${record.reason ?? "the resolution failed"}`;
        if (subject.task !== undefined) step.task(subject.task).reason = reason;
        else Object.assign(step.workstream(subject.workstream), { autoMergeSkipped: true, reason });
        step.log({
          type: "conflict",
          workstream: subject.workstream,
          ...(subject.task ? { task: subject.task } : {}),
          detail: reason,
        });
        return null;
      }
      // Merge again, unless the run was cancelled.
      if (step.state.cancelled) return null;
      return subject.task === undefined || holder.open ? subject : null;
    }
  }
}

/**
 * Resolutions that did not report before their deadline, as the facts that fail them (the
 * reconciler's tick applies each as resolutionFact).
 */
export function lateResolutions(step: RunEdit): Extract<About, { type: "resolution_finished" }>[] {
  const late = (conflict: Conflict | undefined) =>
    conflict?.resolutions.find(
      (r) => r.outcome === null && r.deadline !== undefined && step.at >= r.deadline,
    );
  const expired: Extract<About, { type: "resolution_finished" }>[] = [];
  const expire = (subject: ResolutionSubject, n: number) =>
    expired.push({
      type: "resolution_finished",
      ...subject,
      n,
      ok: false,
      reason: "the resolution did not report before its deadline",
      at: step.at,
    });
  for (const [workstream, w] of Object.entries(step.state.workstreams)) {
    const record = late(w.conflict);
    if (record) expire({ workstream }, record.n);
  }
  for (const [task, t] of Object.entries(step.state.tasks)) {
    if (t.status !== "pr_open") continue;
    const record = late(t.conflict);
    if (record) expire({ workstream: step.plan.tasks.get(task)!.workstreamId, task }, record.n);
  }
  return expired;
}

/** The conflict of a subject's PR in a run (a task's PR, or a workstream's integration PR). */
export const conflictOf = (
  run: Pick<RunState, "tasks" | "workstreams">,
  subject: ResolutionSubject,
): Conflict | undefined =>
  (subject.task !== undefined ? run.tasks[subject.task] : run.workstreams[subject.workstream])?.conflict;

/** The records of a subject's jobs: a PR's resolutions, or an integration branch's verifications or repairs. */
export function recordsOf(
  run: Pick<RunState, "tasks" | "workstreams">,
  subject: ResolutionSubject,
): ResolutionRecord[] | undefined {
  if (subject.kind === undefined) return conflictOf(run, subject)?.resolutions;
  const v = run.workstreams[subject.workstream]?.verification;
  return subject.kind === "verify" ? v?.runs : v?.repairs;
}

/** A task PR whose conflicts were left to a person. */
export const leftToPerson = (t: TaskRun): boolean => t.status === "pr_open" && t.conflict?.toPerson === true;

/** A running resolution of the subject (the merge waits for it rather than being asked again). */
export const resolving = (conflict: Conflict | undefined): boolean =>
  conflict?.resolutions.at(-1)?.outcome === null;

/**
 * The resolutions running in a run, with their subjects (for hosts that look for their jobs), and the
 * verifications and repairs of integration branches (jobs of the same kind).
 */
export function runningResolutions(
  state: RunState,
  plan: Plan,
): { subject: ResolutionSubject; record: ResolutionRecord }[] {
  const running: { subject: ResolutionSubject; record: ResolutionRecord }[] = [];
  for (const [workstream, w] of Object.entries(state.workstreams)) {
    const record = w.conflict?.resolutions.at(-1);
    if (record?.outcome === null) running.push({ subject: { workstream }, record });
    for (const kind of ["verify", "repair"] as const) {
      const landing = recordsOf(state, { workstream, kind })?.at(-1);
      if (landing?.outcome === null) running.push({ subject: { workstream, kind }, record: landing });
    }
  }
  for (const [task, t] of Object.entries(state.tasks)) {
    const record = t.conflict?.resolutions.at(-1);
    if (record?.outcome === null)
      running.push({ subject: { workstream: plan.tasks.get(task)!.workstreamId, task }, record });
  }
  return running;
}

/** Facts for resolutions whose jobs are gone (a local runner that was interrupted). */
export const lostResolutions = (state: RunState, plan: Plan, reason: string, at: number): EngineEvent[] =>
  runningResolutions(state, plan).map(({ subject, record }) => ({
    type: "resolution_lost",
    ...subject,
    n: record.n,
    reason,
    at,
  }));

/** Asks the host to stop the resolutions running in the run, or for one task's PR. */
export function cancelResolutions(step: RunEdit, only?: string): void {
  for (const { subject, record } of runningResolutions(step.state, step.plan)) {
    if (only !== undefined && subject.task !== only) continue;
    step.emit({
      type: "cancel_resolution",
      key: `${resolutionKey(step, subject, record.n)}/cancel`,
      ...subject,
      n: record.n,
    });
  }
}
