/**
 * The checks of a retried task's work, where the orchestrator acts as a registered app without a
 * hosted one: what a job pushed with GITHUB_TOKEN starts no workflow, so the app moves the branch.
 */
import type { PullRequest } from "../engine/types.ts";
import type { RepoContext } from "./client.ts";
import type { HostedRun } from "./hosted-run.ts";

/**
 * Without a hosted app, a task job pushes with its own GITHUB_TOKEN, and GitHub starts no workflow
 * for that push: the task PR that a retried attempt updated would keep the checks of the commit
 * before it. Acting as a registered app, the orchestrator moves the branch itself, to a commit with
 * the same tree on top of the job's, so that the repository's CI runs on the work about to merge.
 * Once per attempt: when the head is no longer the job's own commit, there is nothing to do.
 */
export async function startChecksOfRetry(
  ctx: RepoContext,
  run: HostedRun,
  id: string,
  pr: PullRequest,
  branch: string,
): Promise<void> {
  if (ctx.config.workflow?.token !== "app") return;
  const t = run.tasks[id];
  const pushed = t?.attempts[t.attempt - 1]?.pushedSha;
  if (!t || t.attempt < 2 || !pushed) return;
  const { data } = await ctx.octokit.rest.pulls.get({
    owner: ctx.owner,
    repo: ctx.repo,
    pull_number: pr.number,
  });
  if (data.head.sha !== pushed || data.state !== "open") return;
  const { data: commit } = await ctx.octokit.rest.git.getCommit({
    owner: ctx.owner,
    repo: ctx.repo,
    commit_sha: pushed,
  });
  const { data: touch } = await ctx.octokit.rest.git.createCommit({
    owner: ctx.owner,
    repo: ctx.repo,
    message: `Run the checks on attempt ${t.attempt} of ${id}\n\nIts job pushed with the workflow's token, for which GitHub starts no workflow.`,
    tree: commit.tree.sha,
    parents: [pushed],
  });
  await ctx.octokit.rest.git.updateRef({
    owner: ctx.owner,
    repo: ctx.repo,
    ref: `heads/${branch}`,
    sha: touch.sha,
    force: false,
  });
  ctx.log(`${branch}: moved to ${touch.sha.slice(0, 7)} as the app, so that CI runs on attempt ${t.attempt}`);
}
