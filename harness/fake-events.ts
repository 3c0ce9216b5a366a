/**
 * Which workflows GitHub starts for an event, and for whom: the rules the stand-in follows before it
 * starts a workflow run, each from GitHub's documentation.
 * - Events made with a workflow's GITHUB_TOKEN start no workflow, except workflow_dispatch and
 *   repository_dispatch (https://docs.github.com/en/actions/concepts/security/github_token, "When
 *   GITHUB_TOKEN triggers workflow runs"). Webhooks to an app are still delivered: the rule is about
 *   workflow runs.
 * - The pull_request runs of a PR GITHUB_TOKEN opened, reopened or pushed to (synchronize) are created
 *   but held until a person with write access approves them; its other activity types (closed,
 *   labeled, edited) create none (https://docs.github.com/en/actions/how-tos/write-workflows/choose-when-workflows-run/trigger-a-workflow#triggering-a-workflow-from-a-workflow;
 *   github/docs#44419). The default of the fake's settings (fake-repo-settings.ts).
 * - check_suite and check_run "will not trigger workflows if the check suite was created by GitHub
 *   Actions or if the check suite's head SHA is associated with GitHub Actions"
 *   (https://docs.github.com/en/actions/reference/workflows-and-actions/events-that-trigger-workflows#check_suite):
 *   a workflow never learns from them that Actions CI finished. An app's webhooks do carry them
 *   (actions/actions-runner-controller scales on Actions' check_run webhooks).
 * - workflow_run starts only workflows on the default branch, matched by the names in
 *   `workflow_run.workflows` (glob patterns: github/docs#37022) and by `branches` against the
 *   triggering run's head branch, and no deeper than three levels of workflow_run ("You can't use
 *   workflow_run to chain together more than three levels of workflows. For example, if you attempt
 *   to trigger five workflows (named B to F) to run sequentially after an initial workflow A has run
 *   (that is: A → B → C → D → E → F), workflows E and F will not be run"): A, B, C and D run.
 * - A run that a workflow's GITHUB_TOKEN dispatched starts no workflow_run when it completes. GitHub
 *   does not say either way (its rule is that GITHUB_TOKEN's events start no workflow run, dispatch
 *   excepted); the fake takes the stricter reading, so that nothing the product does rests on the
 *   other. Whether a workflow_dispatch made by a workflow_run-started job restarts the count is not
 *   documented either: the fake never restarts it for a run GITHUB_TOKEN started (it starts nothing).
 * - schedule runs on the default branch, late at busy times, and queued runs may be dropped
 *   (https://docs.github.com/en/actions/reference/workflows-and-actions/events-that-trigger-workflows#schedule);
 *   a disabled workflow starts on no event (https://docs.github.com/en/rest/actions/workflows#disable-a-workflow).
 */
import type { TokenKind } from "./fake-repo-settings.ts";
import { matchesFilter } from "../src/github/workflow-files.ts";

/** The pull_request activity types whose runs GITHUB_TOKEN's events create held for approval. */
const HELD_ACTIONS = new Set(["opened", "synchronize", "reopened"]);

/** Who made the event: a workflow's GITHUB_TOKEN, a registered app's token, or a person. */
export type Actor = TokenKind | "person";

/** Whether GitHub starts workflows for `event` made by `actor` ("held": created, awaiting approval). */
export function startsWorkflows(
  event: string,
  actor: Actor,
  options: { checkSuiteApp?: string; approvalForActionsPullRequests?: boolean; action?: string } = {},
): "yes" | "no" | "held" {
  if ((event === "check_suite" || event === "check_run") && options.checkSuiteApp === "github-actions")
    return "no";
  // "The rerequested and requested_action event type payloads are only sent to the GitHub App being
  // requested" (https://docs.github.com/en/webhooks/webhook-events-and-payloads#check_run): never to a
  // workflow, whoever pressed the button.
  if (event === "check_run" && (options.action === "rerequested" || options.action === "requested_action"))
    return "no";
  if (actor !== "github_token") return "yes";
  if (event === "workflow_dispatch" || event === "repository_dispatch") return "yes";
  if (
    event === "pull_request" &&
    (options.approvalForActionsPullRequests ?? true) &&
    HELD_ACTIONS.has(options.action ?? "opened")
  )
    return "held";
  return "no";
}

/** The deepest chain of workflow_run GitHub starts. */
export const WORKFLOW_RUN_DEPTH = 3;

/** The login GitHub names as a run's triggering actor when a workflow's GITHUB_TOKEN started it. */
export const ACTIONS_BOT_LOGIN = "github-actions[bot]";

/**
 * Whether a workflow listening with `on.workflow_run` starts when a run of `workflow` on `headBranch`
 * completes, that run being `depth` levels of workflow_run into its chain (0: started by another
 * event) and started by `actor`.
 */
export function workflowRunStarts(
  on: { workflows?: string[]; branches?: string[] } | undefined,
  run: { workflow: string; headBranch: string; depth: number; actor?: Actor },
): boolean {
  if (!on) return false;
  if (run.actor === "github_token") return false;
  if (!matchesFilter(on.workflows ?? [], run.workflow)) return false;
  if (on.branches && !matchesFilter(on.branches, run.headBranch)) return false;
  // The run it would start is workflow_run level depth + 1 (in the docs' example, D is level 3).
  return run.depth + 1 <= WORKFLOW_RUN_DEPTH;
}
