/**
 * GitHub refuses a push that creates or changes a file under `.github/workflows/` unless the token
 * holds the `workflows` permission ("refusing to allow a GitHub App to create or update workflow ...
 * without `workflows` permission": chdsbd/kodiak#641, peter-evans/create-pull-request#1713). No token
 * of agentrelay's holds it (GITHUB_TOKEN never can; the app never asks for it), so an attempt whose
 * work changes a workflow file is stopped before its push, with the reason and the way forward,
 * rather than failing at the push or leaving a PR no one may merge.
 */
import type { CheckoutGit } from "./git.ts";

export const WORKFLOWS_DIR = ".github/workflows/";

/** The workflow files among changed paths. */
export const workflowFilesIn = (paths: readonly string[]): string[] =>
  paths.filter((p) => p.startsWith(WORKFLOWS_DIR));

/** The one-line finding for an attempt that changed workflow files, or null. */
export function workflowEditFinding(paths: readonly string[]): string | null {
  const files = workflowFilesIn(paths);
  if (files.length === 0) return null;
  return `the task changed ${files.join(", ")}, and GitHub refuses a push that changes a workflow file from a token without the \`workflows\` permission, which agentrelay's tokens do not hold: a person makes that change (the attempt's log shows what the agent did), or the task job gets a token that holds \`workflows\` with AGENTRELAY_WORKFLOWS_PERMISSION=write on its step (docs/github.md, Workflow files)`;
}

/** The finding for the commits between `from` and `to` in the runner's checkout, or null. */
export async function workflowEdits(repo: CheckoutGit, from: string, to: string): Promise<string | null> {
  const changed = (await repo.git(["diff", "--no-renames", "--name-only", "-z", from, to]))
    .split("\0")
    .filter(Boolean);
  return workflowEditFinding(changed);
}

/**
 * The workflow files `to` changes against `from` in the runner's checkout: a verification's merge of
 * a target that changed one brings it, and GitHub refuses that push from any token of agentrelay's.
 */
export async function workflowsBroughtIn(repo: CheckoutGit, from: string, to: string): Promise<string[]> {
  const changed = await repo.git([
    "diff",
    "--no-renames",
    "--name-only",
    "-z",
    from,
    to,
    "--",
    WORKFLOWS_DIR,
  ]);
  return workflowFilesIn(changed.split("\0").filter(Boolean));
}
