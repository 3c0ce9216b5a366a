/**
 * Which workflow run is an attempt's: the one rule every path that changes an attempt from a run
 * (a `workflow_run` event, the reconciler's lookups, a job's first token, a cancellation) goes by.
 *
 * A run-name is text anyone who can open a pull request can write: a fork's PR may change the task
 * workflow to run on `pull_request` with the attempt's very run-name, and GitHub then sends its
 * `workflow_run` to the app and to the orchestrator workflow alike. What a fork cannot forge is where
 * the run comes from: the task workflow's file in this repository (`path`), started by
 * `workflow_dispatch` (`event`, which only someone with write access can start), on the run's branch
 * (`head_branch`), in this repository (`head_repository`). Once an attempt is bound to its run (the
 * id GitHub returned for the dispatch, or the job that took the attempt's first token), only that run
 * id counts. Before it is bound, a run that passes every other check is a dispatch of this
 * repository's task workflow by someone with write access, created after the attempt's own dispatch
 * (an earlier run bearing the name, from before the state went back, is not it); such a person can
 * already push, so it is taken as the attempt's, and binds it (security case 32b).
 * Payload fields: https://docs.github.com/en/webhooks/webhook-events-and-payloads#workflow_run.
 */
import { attemptRunName, type RepoContext } from "./client.ts";

/** The fields of a workflow run (webhook payload or REST) the rule reads; absent ones do not match. */
export interface WorkflowRunFacts {
  id: number | string;
  path?: string | null;
  event?: string | null;
  head_branch?: string | null;
  head_repository?: { full_name?: string | null } | null;
  display_title?: string | null;
  created_at?: string | null;
}

/** The attempt a run is matched against: its `task` input, number, and what the run state holds of it. */
export interface AttemptOfRun {
  runKey: string;
  /** The `task` input: a task id, or a resolution's (protocol/resolution.ts). */
  input: string;
  attempt: number;
  /** The branch the task workflow is dispatched on (the run's source branch). */
  branch: string;
  /** The bound run id, when there is one, and when the attempt was dispatched. */
  record: { job?: string | null; dispatchedAt: number } | undefined;
}

/** GitHub's clock and the app's may differ by this much. */
const CLOCK_SKEW_MS = 60_000;

/** Why `run` is not the attempt's run (one phrase), or null when it is. */
export function notAttemptRun(ctx: RepoContext, run: WorkflowRunFacts, of: AttemptOfRun): string | null {
  const workflow = `.github/workflows/${ctx.config.taskWorkflow}`;
  const repository = `${ctx.owner}/${ctx.repo}`.toLowerCase();
  if (run.id === undefined || run.id === null || run.id === "") return "it has no id";
  if (run.path !== workflow) return `it is not ${workflow}`;
  if (run.event !== "workflow_dispatch") return `it was started by ${run.event ?? "an unknown event"}`;
  if (run.head_repository?.full_name?.toLowerCase() !== repository)
    return `it ran from ${run.head_repository?.full_name ?? "an unknown repository"}`;
  if (run.head_branch !== of.branch) return `it ran on ${run.head_branch ?? "an unknown branch"}`;
  if (run.display_title !== attemptRunName(of.runKey, of.input, of.attempt))
    return "it bears another run-name";
  if (!of.record) return "the run state has no such attempt";
  if (of.record.job) return of.record.job === String(run.id) ? null : `the attempt is run ${of.record.job}`;
  const created = Date.parse(run.created_at ?? "");
  if (!(created >= of.record.dispatchedAt - CLOCK_SKEW_MS)) return "it was created before the attempt";
  return null;
}

/** Whether `run` is the attempt's run (see notAttemptRun). */
export const isAttemptRun = (ctx: RepoContext, run: WorkflowRunFacts, of: AttemptOfRun): boolean =>
  notAttemptRun(ctx, run, of) === null;
