/**
 * How each event changes the run state (the `switch` behind `decide`). Events about an attempt other
 * than the current one, and facts already recorded, change nothing.
 */
import { allowance, charge, unreserve } from "./budget.ts";
import type { ResolutionSubject } from "../plan/resolution.ts";
import { applyCommand } from "./commands.ts";
import { conflicted, lateResolutions, resolutionFact } from "./conflicts.ts";
import type { Step } from "./step.ts";
import type { EngineEvent, TaskRun } from "./types.ts";
import {
  checksFailed,
  landingDeadlines,
  landingFact,
  landingsDue,
  maybeAutoMerge,
  nextInLine,
  resolvedAndVerified,
  unverified,
} from "./verification.ts";

const sameOutputs = (a: TaskRun["outputs"], b: TaskRun["outputs"]) => JSON.stringify(a) === JSON.stringify(b);

function addConcerns(step: Step, task: TaskRun, kind: "design" | "ops", messages: readonly string[]): void {
  const list = kind === "design" ? task.concerns : task.opsConcerns;
  for (const message of messages) {
    const text = message.trim();
    if (text && !list.includes(text)) {
      list.push(text);
      step.changed = true;
    }
  }
}

/** Asks again for the merge a resolution ended on: the task's PR, or the workstream's landing. */
function mergeAgain(step: Step, subject: ResolutionSubject | null): void {
  if (!subject) return;
  if (subject.task !== undefined) step.requestTaskPr(subject.task);
  else maybeAutoMerge(step, subject.workstream);
}

/** How the reason of a workstream whose auto-merge failed begins. */
export const AUTO_MERGE_FAILED = "auto-merge failed: ";

export function applyEvent(step: Step, event: EngineEvent): void {
  const { state, plan } = step;
  const known = (task: string) => plan.tasks.has(task);
  const ws = (id: string) => state.workstreams[id];
  /** The record of `attempt` when it is the task's current attempt and still running, else null. */
  const runningAttempt = (task: string, attempt: number) => {
    if (!known(task)) return null;
    const t = step.task(task);
    return attempt === t.attempt && t.status === "running" ? t.attempts[attempt - 1]! : null;
  };

  switch (event.type) {
    case "job_dispatched": {
      const record = runningAttempt(event.task, event.attempt);
      if (record && !record.job && record.startedAt === null) {
        record.job = event.job;
        step.changed = true;
        step.quiet = true;
      }
      return;
    }
    case "job_started": {
      // Once per attempt, for the current one while it runs, and only by the job dispatched for it:
      // the app mints the attempt's token only then.
      const record = runningAttempt(event.task, event.attempt);
      if (!record || record.startedAt !== null) return;
      if (record.job && event.job !== record.job) return;
      record.startedAt = event.at;
      if (event.job) record.job = event.job;
      step.changed = true;
      return;
    }
    case "job_succeeded": {
      if (!known(event.task)) return;
      const t = step.task(event.task);
      if (event.attempt !== t.attempt) return;
      const record = t.attempts[t.attempt - 1]!;
      // Concerns are a set (reported one by one, or all at once here), so duplicates change nothing.
      addConcerns(step, t, "design", event.concerns ?? []);
      addConcerns(step, t, "ops", event.opsConcerns ?? []);
      if (
        t.summary !== (event.summary ?? null) ||
        (event.outputs && !sameOutputs(t.outputs, event.outputs))
      ) {
        t.summary = event.summary ?? null;
        t.outputs = [...(event.outputs ?? [])];
        step.changed = true;
      }
      if (record.outcome === null) {
        record.outcome = "succeeded";
        charge(step, event.task, record, event.costMicros);
        record.turns = event.turns ?? null;
        unreserve(step, plan.tasks.get(event.task)!.workstreamId, record);
        step.changed = true;
      }
      if (t.status !== "running") return;
      step.log({
        type: "task_succeeded",
        task: event.task,
        attempt: t.attempt,
        ...(event.noPr ? { detail: "no changes" } : {}),
      });
      if (event.noPr) {
        t.noPr = true;
        step.finishTask(event.task, "completed");
        return;
      }
      t.status = "pr_open";
      step.requestTaskPr(event.task);
      return;
    }
    case "job_failed": {
      const record = runningAttempt(event.task, event.attempt);
      /** A verdict from a job other than the one the attempt is bound to is not about the attempt. */
      const another = (r: { job?: string | null }) =>
        event.job !== undefined && !!r.job && r.job !== event.job;
      if (!record) {
        // An attempt stopped before it reported (cancelled) still spent what it spent.
        const stopped = known(event.task) ? step.task(event.task).attempts[event.attempt - 1] : undefined;
        if (stopped && !another(stopped)) charge(step, event.task, stopped, event.costMicros);
        return;
      }
      if (another(record)) return;
      if (event.job !== undefined) record.job = event.job;
      const kind = event.kind ?? "failed";
      record.outcome = kind;
      record.reason = event.reason;
      charge(step, event.task, record, event.costMicros);
      if (event.turns != null) record.turns = event.turns;
      if (event.gateOutput) record.gateOutput = event.gateOutput;
      // Stopped by a budget other than its own per-attempt limit (its share of the run's or its
      // workstream's, what was left of the task's): not the task's failure. The attempt is given back;
      // the task runs again with what it is allowed, or waits for a raise. (Runs from before `capBy`
      // give it back when the budget is now spent.)
      const byShare = record.capBy ? record.capBy !== "attempt" : "spent" in allowance(step, event.task);
      if (event.overBudget && byShare) {
        step.task(event.task).attemptBase++;
        record.givenBack = true;
      }
      // The agent could not work here: the same cause would fail a retry, so the task waits for a person.
      if (event.agentUnavailable) step.task(event.task).attemptBase++;
      step.failTask(
        event.task,
        event.reason,
        kind === "cancelled" ? "cancelled" : "failed",
        kind !== "cancelled" && !event.agentUnavailable,
      );
      return;
    }
    case "job_lost": {
      const record = runningAttempt(event.task, event.attempt);
      if (!record) return;
      const t = step.task(event.task);
      record.outcome = "cancelled";
      record.reason = event.reason;
      // The lost attempt does not count against the task's budget.
      t.attemptBase++;
      step.failTask(event.task, event.reason, "failed", true);
      return;
    }
    case "task_branch_pushed": {
      if (!known(event.task)) return;
      const record = step.task(event.task).attempts[event.attempt - 1];
      if (record && record.pushedSha !== event.sha) {
        record.pushedSha = event.sha;
        step.changed = true;
      }
      return;
    }
    case "concern_recorded": {
      if (!known(event.task) || !step.task(event.task).attempts[event.attempt - 1]) return;
      addConcerns(step, step.task(event.task), event.kind, [event.message]);
      return;
    }
    case "gate_result": {
      if (!known(event.task)) return;
      const record = step.task(event.task).attempts[event.attempt - 1];
      if (!record || record.gates.some((g) => g.n === event.n)) return;
      record.gates.push({ n: event.n, passed: event.passed });
      record.gates.sort((a, b) => a.n - b.n);
      step.changed = true;
      return;
    }
    case "task_pr_opened": {
      if (!known(event.task)) return;
      const t = step.task(event.task);
      if (t.pr?.number === event.pr.number) return;
      t.pr = event.pr;
      step.changed = true;
      if (t.status === "pr_open") step.requestTaskPr(event.task);
      return;
    }
    case "task_pr_merged": {
      if (!known(event.task)) return;
      const t = step.task(event.task);
      if (t.status === "merged") return;
      if (!t.pr) t.pr = event.pr;
      const record = t.attempts[t.attempt - 1];
      if (record && record.outcome === null) record.outcome = "succeeded";
      step.finishTask(event.task, "merged");
      return;
    }
    case "task_pr_closed": {
      if (!known(event.task)) return;
      const t = step.task(event.task);
      if (t.status !== "pr_open" || t.pr?.number !== event.pr.number) return;
      step.failTask(event.task, `task PR #${event.pr.number} was closed without merging`, "failed", false);
      return;
    }
    case "task_merge_failed": {
      if (!known(event.task)) return;
      if (step.task(event.task).status !== "pr_open") return;
      step.failTask(event.task, `merging the task PR failed: ${event.reason}`, "failed", true);
      return;
    }
    case "workstream_prepared": {
      const w = ws(event.workstream);
      if (!w || w.preparation === "done") return;
      w.preparation = "done";
      step.changed = true;
      return;
    }
    case "workstream_prepare_failed": {
      if (!ws(event.workstream)) return;
      step.failWorkstream(event.workstream, `preparing the integration branch failed: ${event.reason}`);
      return;
    }
    case "integration_pr_opened": {
      const w = ws(event.workstream);
      if (!w || w.integration === "open" || w.integration === "merged" || w.integration === "closed") return;
      w.integration = "open";
      w.pr = event.pr;
      step.changed = true;
      step.log({ type: "integration_opened", workstream: event.workstream });
      if (w.unfinished === 0 && w.status !== "failed") {
        w.status = "pr_open";
        maybeAutoMerge(step, event.workstream);
      }
      return;
    }
    case "integration_skipped": {
      const w = ws(event.workstream);
      if (!w || w.status === "merged") return;
      w.integration = "skipped";
      w.status = "merged";
      step.changed = true;
      step.log({ type: "integration_skipped", workstream: event.workstream });
      return;
    }
    case "integration_pr_merged": {
      const w = ws(event.workstream);
      if (!w || w.integration === "merged") return;
      w.integration = "merged";
      if (event.commit) w.landedCommit = event.commit;
      if (event.pr) w.pr ??= event.pr;
      const wasFailed = w.status === "failed";
      w.status = "merged";
      w.failedItself = false;
      w.reason = null;
      step.changed = true;
      step.log({ type: "integration_merged", workstream: event.workstream });
      if (event.unverified) {
        w.landedUnverified = event.unverified;
        step.log({
          type: "verification_failed",
          workstream: event.workstream,
          detail: `landed unverified: ${event.unverified}`,
        });
      }
      if (wasFailed) step.unblock();
      // The next workstream into the same target may verify now: the target it lands on is settled.
      nextInLine(step, event.workstream);
      return;
    }
    case "integration_merge_failed": {
      const w = ws(event.workstream);
      if (!w || w.status !== "pr_open" || w.autoMergeSkipped) return;
      w.autoMergeSkipped = true;
      w.reason = `${AUTO_MERGE_FAILED}${event.reason}`;
      step.changed = true;
      return;
    }
    case "integration_conflicted":
    case "task_conflicted": {
      const failure = conflicted(step, event);
      if (failure) step.failTask(failure.task, failure.reason, "failed", true);
      return;
    }
    case "resolution_dispatched":
    case "resolution_started":
    case "resolution_lost":
    case "resolution_finished":
      if (event.kind !== undefined && event.task === undefined)
        landingFact(step, { ...event, kind: event.kind });
      else {
        // A resolution that ran the gates on the merged tree verified it, before the merge is asked again.
        if (event.type === "resolution_finished") resolvedAndVerified(step, event);
        mergeAgain(step, resolutionFact(step, event));
      }
      return;
    case "integration_unverified":
      unverified(step, event.workstream, event.reason);
      return;
    case "integration_checks_failed":
      checksFailed(step, event.workstream, event.head, event.output);
      return;
    case "integration_pr_closed": {
      const w = ws(event.workstream);
      if (!w || w.integration === "merged" || w.integration === "closed") return;
      w.integration = "closed";
      step.failWorkstream(
        event.workstream,
        `integration PR${w.pr ? ` #${w.pr.number}` : ""} was closed without merging`,
      );
      nextInLine(step, event.workstream);
      return;
    }
    case "integration_failed": {
      const w = ws(event.workstream);
      if (!w || w.integration !== "opening") return;
      w.integration = "none";
      step.failWorkstream(event.workstream, `opening the integration PR failed: ${event.reason}`);
      return;
    }
    case "command":
      applyCommand(step, event);
      return;
    case "tick": {
      for (const id of plan.order) {
        const t = step.task(id);
        if (t.status !== "running") continue;
        const record = t.attempts[t.attempt - 1]!;
        if (event.at < record.deadline) continue;
        record.outcome = "timed_out";
        record.reason = "the attempt did not report before its deadline";
        step.cancelAttempt(id);
        step.failTask(id, `attempt ${t.attempt} timed out`, "failed", true);
      }
      for (const late of lateResolutions(step)) mergeAgain(step, resolutionFact(step, late));
      landingDeadlines(step);
      landingsDue(step);
      return;
    }
  }
}
