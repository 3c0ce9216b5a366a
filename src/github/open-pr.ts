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
