/**
 * Landing a verified integration branch so that nothing unverified can land. GitHub's merge of a PR
 * pins its head (`sha`) but has no condition on its base
 * (https://docs.github.com/en/rest/pulls/pulls#merge-a-pull-request): a push to the target between the
 * verification and the merge lands a combination nobody verified. So, where the target's rules let
 * the app move it, the target is fast-forwarded to the verified commit (the integration branch with
 * the target it was checked with merged in) by `PATCH /git/refs/heads/{target}` with `force: false`,
 * which GitHub refuses (422 "Update is not a fast forward") once the target moved: a compare-and-swap
 * on the base (https://docs.github.com/en/rest/git/refs#update-a-reference). GitHub then marks the PR
 * merged by itself, its head now being on its base (refined-github/sandbox#163; Mergifyio/mergify#364:
 * "merged_by" is whoever pushed), and sends `pull_request` closed with `merged: true`.
 *
 * Where a rule refuses the update (a ruleset's "Changes must be made through a pull request.", branch
 * protection's "Protected branch update failed", required checks), the PR is merged with `sha`; there,
 * strict required checks (or a merge queue) make GitHub refuse a base that moved, and otherwise the
 * check right after the merge (Merges.landedAsVerified) is the last net.
 */
import { messageOf, type RepoContext, statusOf } from "./client.ts";
import { oneLine, refusal } from "./merges.ts";

/** GitHub's 422 for a ref update that is not a fast-forward (without `force`). */
export const NOT_FAST_FORWARD = /not a fast.forward/i;

/** The pair a verification passed: the target as it was, and the integration branch's head. */
export interface VerifiedPair {
  base: string;
  head: string;
}

/**
 * What a landing by fast-forward came to: `landed`, the commit the target took; `moved`, why the pair
 * is no longer the one to land (verified again); or `refused`, what refused the direct update (the
 * PR is merged instead).
 */
export type FastForward = { landed: string } | { moved: string } | { refused: string };

const headOf = async (ctx: RepoContext, branch: string): Promise<string> =>
  (await ctx.octokit.rest.git.getRef({ owner: ctx.owner, repo: ctx.repo, ref: `heads/${branch}` })).data
    .object.sha;

/** Why `target` is no longer the commit it was verified with, or null (a read, no write). */
export async function targetMoved(ctx: RepoContext, target: string, base: string): Promise<string | null> {
  return (await headOf(ctx, target)) === base ? null : `${target} moved since it was verified`;
}

/**
 * Where the target stands against the verified pair: null, where it was verified; `landed`, where it
 * already took this pair's landing (a retry of one whose answer was lost: GitHub moved the target, and
 * a new commit would be no fast-forward of it); else `moved`.
 */
export async function targetSince(
  ctx: RepoContext,
  target: string,
  verified: VerifiedPair,
): Promise<{ landed: string } | { moved: string } | null> {
  const now = await headOf(ctx, target);
  if (now === verified.base) return null;
  const { data } = await ctx.octokit.rest.git.getCommit({
    owner: ctx.owner,
    repo: ctx.repo,
    commit_sha: now,
  });
  const [first, second, ...more] = data.parents.map((p) => p.sha);
  if (first === verified.base && second === verified.head && more.length === 0) return { landed: now };
  return { moved: `${target} moved since it was verified` };
}

/**
 * Lands the verified pair as GitHub's merge button would (a merge commit, the target as its first
 * parent, so the target's first-parent history holds only trees it took), but only from the verified
 * base: the commit's tree is the verified head's, its parents the verified base and head, and the
 * target moves to it by fast-forward alone. `commit`: the commit that landed.
 */
export async function fastForward(
  ctx: RepoContext,
  target: string,
  branch: string,
  verified: VerifiedPair,
  message: string,
): Promise<FastForward> {
  const repo = { owner: ctx.owner, repo: ctx.repo };
  // A push to the branch after the check: its PR would stay open with the commits that came later.
  if ((await headOf(ctx, branch)) !== verified.head)
    return { moved: "its branch moved since it was verified" };
  // The head holds the base it was verified with, unless the verification left the target's merge
  // to GitHub (a workflow file changed on it): then only the PR's merge builds the tree it verified.
  const { data: compared } = await ctx.octokit.rest.repos.compareCommitsWithBasehead({
    ...repo,
    basehead: `${verified.base}...${verified.head}`,
  });
  if (compared.behind_by > 0) return { refused: `${branch} does not hold ${target}` };
  const { data: head } = await ctx.octokit.rest.git.getCommit({ ...repo, commit_sha: verified.head });
  const { data: commit } = await ctx.octokit.rest.git.createCommit({
    ...repo,
    message,
    tree: head.tree.sha,
    parents: [verified.base, verified.head],
  });
  try {
    await ctx.octokit.rest.git.updateRef({ ...repo, ref: `heads/${target}`, sha: commit.sha, force: false });
    return { landed: commit.sha };
  } catch (error) {
    const message = oneLine(messageOf(error));
    // Moved, or moved to this very pair's landing (another replica's, for the same event twice).
    if (statusOf(error) === 422 && NOT_FAST_FORWARD.test(message))
      return (await targetSince(ctx, target, verified)) ?? { moved: `${target} moved since it was verified` };
    // A rule, branch protection or a permission (`workflows`) refuses a push that is not a PR's merge.
    if (statusOf(error) === 422 || refusal(error, ctx)) return { refused: message };
    throw error;
  }
}
