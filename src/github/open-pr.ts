/**
 * Opens a PR, safe to repeat: a create that answers "already exists" finds the branch's open PR (or
 * the merged one whose answer was lost); a PR with nothing in it is "empty"; a refusal that only a
 * person can end is a wait, in one line. `lookFirst` looks for the branch's PR before creating one: a
 * held report comes again, and each refused create would cost a write.
 */
import type { PullRequest } from "../engine/types.ts";
import { messageOf, type RepoContext, statusOf, validationDetails } from "./client.ts";
import { oneLine, refusal, type Wait } from "./merges.ts";

export async function openPr(
  ctx: RepoContext,
  head: string,
  base: string,
  title: string,
  body: string,
  lookFirst = false,
): Promise<PullRequest | "empty" | { reason: string } | { wait: Wait }> {
  if (lookFirst) {
    const found = await openPrOf(ctx, head, base);
    if (found) return found;
  }
  try {
    const { data } = await ctx.octokit.rest.pulls.create({
      owner: ctx.owner,
      repo: ctx.repo,
      head,
      base,
      title,
      body,
      maintainer_can_modify: false,
    });
    return { number: data.number, url: data.html_url };
  } catch (error) {
    const refused = refusal(error, ctx);
    if (refused) {
      const setting = /not permitted to create or approve pull requests/i.test(messageOf(error));
      return {
        wait: {
          person: true,
          line: setting
            ? `GitHub refuses the PR from ${head} into ${base}: the orchestrator acts as GITHUB_TOKEN, and the repository does not let it open PRs: turn on Settings, Actions, General, "Allow GitHub Actions to create and approve pull requests" (the run goes on by itself)`
            : `GitHub refuses the PR from ${head} into ${base}: ${oneLine(messageOf(error))}`,
        },
      };
    }
    if (statusOf(error) !== 422) throw error;
    // A retried create (or an earlier attempt's PR): the open PR of this branch is the one; a
    // merged one means the merge happened and its answer was lost (a crash between the two).
    const found = await openPrOf(ctx, head, base);
    if (found) return found;
    if (/no commits between/i.test(validationDetails(error))) return "empty";
    return { reason: `could not open a PR from ${head} into ${base}: ${messageOf(error)}` };
  }
}

/** The open PR of a branch, or the merged one (its merge's answer was lost), if there is one. */
async function openPrOf(ctx: RepoContext, head: string, base: string): Promise<PullRequest | null> {
  const { data } = await ctx.octokit.rest.pulls.list({
    owner: ctx.owner,
    repo: ctx.repo,
    head: `${ctx.owner}:${head}`,
    base,
    state: "all",
  });
  const found = data.find((p) => p.state === "open") ?? data.find((p) => p.merged_at !== null);
  return found ? { number: found.number, url: found.html_url } : null;
}

/** The PR of `head` into `base` that landed, and the commit it landed as where GitHub says. */
export interface LandedPr {
  pr: PullRequest;
  commit?: string;
}

/**
 * The PR of `head` into `base` GitHub merged with `head` where it still is (a merged PR keeps the head
 * it merged: https://docs.github.com/en/rest/pulls/pulls#get-a-pull-request, `head.sha`; a branch
 * deleted since had nothing pushed to it either), or null. An integration whose PR this finds has
 * landed: a handler that decided on a run state older than the landing (another replica wrote it; a
 * crash came between the landing and its write) takes this as the outcome. Bringing the branch up to
 * date and opening a PR again would put a merge of the target on it, and GitHub opens (and the app
 * merges) a second PR with nothing in it: the workstream landed twice. And a merge asked again after
 * its landing's write was lost, the target moved on since, is taken as landed, not verified again
 * (whose next landing would add a second "Integrate" commit).
 */
export async function landedPr(ctx: RepoContext, head: string, base: string): Promise<LandedPr | null> {
  const repo = { owner: ctx.owner, repo: ctx.repo };
  const { data } = await ctx.octokit.rest.pulls.list({
    ...repo,
    head: `${ctx.owner}:${head}`,
    base,
    state: "all",
  });
  const merged = data.filter((p) => p.merged_at !== null && p.base.ref === base);
  if (merged.length === 0) return null;
  let now: string | null = null;
  try {
    now = (await ctx.octokit.rest.git.getRef({ ...repo, ref: `heads/${head}` })).data.object.sha;
  } catch (error) {
    if (statusOf(error) !== 404) throw error;
  }
  const landed = merged.find((p) => now === null || p.head.sha === now);
  if (!landed) return null;
  const pr = { number: landed.number, url: landed.html_url };
  return landed.merge_commit_sha ? { pr, commit: landed.merge_commit_sha } : { pr };
}
