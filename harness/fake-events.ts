/**
 * Which workflows GitHub starts for an event, and for whom: the rules the stand-in follows before it
 * starts a workflow run, each from GitHub's documentation.
 * - Events made with a workflow's GITHUB_TOKEN start no workflow, except workflow_dispatch and
 *   repository_dispatch (https://docs.github.com/en/actions/concepts/security/github_token, "When
 *   GITHUB_TOKEN triggers workflow runs"). Webhooks to an app are still delivered: the rule is about
 *   workflow runs.
 * - Where GitHub has rolled it out, the pull_request runs of a PR GITHUB_TOKEN opened are created but
 *   held until a person with write access approves them (an option of the fake's settings:
 *   fake-repo-settings.ts).
 * - check_suite and check_run "will not trigger workflows if the check suite was created by GitHub
 *   Actions or if the check suite's head SHA is associated with GitHub Actions"
 *   (https://docs.github.com/en/actions/reference/workflows-and-actions/events-that-trigger-workflows#check_suite):
 *   a workflow never learns from them that Actions CI finished. An app's webhooks do carry them
 *   (actions/actions-runner-controller scales on Actions' check_run webhooks).
 * - workflow_run starts only workflows on the default branch, matched by the names in
 *   `workflow_run.workflows` (glob patterns: github/docs#37022) and by `branches` against the
 *   triggering run's head branch, and no deeper than three levels of workflow_run ("You can't use
 *   workflow_run to chain together more than three levels of workflows"). A run a workflow_dispatch
 *   started begins a chain of its own (the fake's reading: GitHub documents the limit for workflow_run).
 * - schedule runs on the default branch, late at busy times, and queued runs may be dropped
 *   (https://docs.github.com/en/actions/reference/workflows-and-actions/events-that-trigger-workflows#schedule);
 *   a disabled workflow starts on no event (https://docs.github.com/en/rest/actions/workflows#disable-a-workflow).
 */
import type { TokenKind } from "./fake-repo-settings.ts";
import { matchesFilter } from "../src/github/workflow-files.ts";

/** Who made the event: a workflow's GITHUB_TOKEN, a registered app's token, or a person. */
export type Actor = TokenKind | "person";

/** Whether GitHub starts workflows for `event` made by `actor` ("held": created, awaiting approval). */
export function startsWorkflows(
  event: string,
  actor: Actor,
  options: { checkSuiteApp?: string; approvalForActionsPullRequests?: boolean } = {},
): "yes" | "no" | "held" {
  if ((event === "check_suite" || event === "check_run") && options.checkSuiteApp === "github-actions")
    return "no";
  if (actor !== "github_token") return "yes";
  if (event === "workflow_dispatch" || event === "repository_dispatch") return "yes";
  if (event === "pull_request" && options.approvalForActionsPullRequests) return "held";
  return "no";
}

/** The deepest chain of workflow_run GitHub starts. */
export const WORKFLOW_RUN_DEPTH = 3;

/**
 * Whether a workflow listening with `on.workflow_run` starts when a run of `workflow` on `headBranch`
 * completes, that run being `depth` levels into a workflow_run chain (0: started by another event).
 */
export function workflowRunStarts(
  on: { workflows?: string[]; branches?: string[] } | undefined,
  run: { workflow: string; headBranch: string; depth: number },
): boolean {
  if (!on) return false;
  if (!matchesFilter(on.workflows ?? [], run.workflow)) return false;
  if (on.branches && !matchesFilter(on.branches, run.headBranch)) return false;
  // The completed run is workflow number depth + 1 of its chain; the one it would start, depth + 2.
  return run.depth + 2 <= WORKFLOW_RUN_DEPTH;
}
