/**
 * Whether a repository's task workflow takes the inputs the app dispatches it with. GitHub refuses a
 * dispatch with an input the workflow file does not declare (422 "Unexpected inputs provided: [...]")
 * or without one it requires ("Create a workflow dispatch event":
 * https://docs.github.com/en/rest/actions/workflows#create-a-workflow-dispatch-event; the fake's
 * harness/fake-dispatch-inputs.ts cites what else says so). A workflow `agentrelay init` wrote before
 * the app sent an input (`run-repository`, for a workstream in another repository) is such a file:
 * its tasks wait with one line saying to run init there, and go on once it is done (reconcile.ts).
 */
import { messageOf, type RepoContext, statusOf } from "./client.ts";
import type { Wait } from "./merges.ts";
import { parseWorkflow } from "./workflow-files.ts";

/** GitHub's refusal of a dispatch whose inputs the workflow file does not take. */
export const INPUTS_REFUSED = /Unexpected inputs provided|Required input .* not provided/i;

/** The key of the wait of a repository whose task workflow is older than the run needs (`OWNER/NAME`). */
export const taskWorkflowWaitKey = (fullName: string): string => `workflow:${fullName}`;

/** What waits on such a workflow: only a person can end it, and the run goes on once they have. */
export const staleTaskWorkflowWait = (fullName: string, workflow: string, why: string): Wait => ({
  person: true,
  line: `${fullName}'s .github/workflows/${workflow} is older than this run needs (${why}): run \`agentrelay init\` there (or \`agentrelay doctor\`); its tasks wait and go on by themselves`,
});

/** The inputs the app always dispatches the task workflow with. */
const ALWAYS_SENT = ["run", "task", "attempt", "state-version", "credential"] as const;

/**
 * The task workflow's inputs: `run-repository` only where it runs in a workstream's repository other
 * than the graph's (and, without an app, `run-repository-name`: create-github-app-token takes the name
 * alone), `tier` only without an app (a workflow init wrote before either takes the rest).
 */
export function dispatchInputs(
  values: Record<(typeof ALWAYS_SENT)[number], string> & {
    "run-repository": string | null;
    "run-repository-name": string | null;
    tier: string | null;
  },
): Record<string, string> {
  return Object.fromEntries(Object.entries(values).filter((e): e is [string, string] => e[1] !== null));
}

/** The names of the inputs `dispatchInputs` sends, for checking a workflow file before a dispatch. */
export const dispatchInputNames = (options: { elsewhere: boolean; workflowMode: boolean }): string[] => [
  ...ALWAYS_SENT,
  ...(options.elsewhere ? ["run-repository"] : []),
  ...(options.elsewhere && options.workflowMode ? ["run-repository-name"] : []),
  ...(options.workflowMode ? ["tier"] : []),
];

/** The wait a dispatch GitHub refused for its inputs leaves (null: refused for another reason). */
export function staleTaskWorkflowRefusal(error: unknown, fullName: string, workflow: string): Wait | null {
  if (statusOf(error) !== 422 || !INPUTS_REFUSED.test(messageOf(error))) return null;
  const said = messageOf(error).replace(/\s+/g, " ").trim().slice(0, 200);
  return staleTaskWorkflowWait(fullName, workflow, `GitHub says "${said}"`);
}

/**
 * Why GitHub would refuse dispatching the workflow `text` with the inputs `names`, in a few words
 * (null: it takes them): an input it does not declare, or one it requires that is not sent.
 */
export function inputsNotTaken(path: string, text: string, names: readonly string[]): string | null {
  const workflow = parseWorkflow({ path, text });
  if (workflow.broken) return "GitHub cannot read it";
  const dispatch = workflow.on.workflow_dispatch;
  if (!dispatch) return "it has no workflow_dispatch trigger";
  const declared = (
    typeof dispatch.inputs === "object" && dispatch.inputs !== null ? dispatch.inputs : {}
  ) as Record<string, { required?: unknown; default?: unknown } | null>;
  const undeclared = names.filter((name) => !Object.hasOwn(declared, name));
  if (undeclared.length > 0)
    return `it does not declare the input${undeclared.length > 1 ? "s" : ""} ${undeclared.join(", ")}`;
  const required = Object.entries(declared)
    .filter(
      ([name, input]) => input?.required === true && input.default === undefined && !names.includes(name),
    )
    .map(([name]) => name);
  return required.length > 0 ? `it requires the input ${required[0]}, which the app does not send` : null;
}

/**
 * Dispatches the task workflow: the run GitHub created for it, when GitHub says (`return_run_details`,
 * its 2026-02-19 change); what GitHub refuses is thrown, as Octokit's error.
 */
export async function dispatchTaskWorkflow(
  ctx: Pick<RepoContext, "octokit" | "owner" | "repo" | "config">,
  ref: string,
  inputs: Record<string, string>,
): Promise<string | null> {
  const route = "POST /repos/{owner}/{repo}/actions/workflows/{workflow_id}/dispatches";
  const request = { owner: ctx.owner, repo: ctx.repo, workflow_id: ctx.config.taskWorkflow, ref, inputs };
  try {
    const { data } = await ctx.octokit.request(route, { ...request, return_run_details: true });
    const id = (data as { workflow_run_id?: number } | undefined)?.workflow_run_id;
    return id ? String(id) : null;
  } catch (error) {
    // GitHub Enterprise Server before the run-details change refuses the unknown field: ask without it
    // (the job is then known by its run-name when it asks for its token).
    if (![400, 422].includes(statusOf(error) ?? 0) || !/return_run_details/.test(messageOf(error)))
      throw error;
    await ctx.octokit.request(route, request);
    return null;
  }
}
