/**
 * Work that waited for GitHub's write limit. With the installation's hour of writes spent, a command
 * in a comment or a pushed graph cannot be carried out (its delivery is answered 503 and nothing is
 * written), and nothing but GitHub itself records that it waits: the comment, the push. The
 * reconciler finds them again from GitHub once the limit frees up (reads cost no write):
 * - commands in comments of the last day that no answer marks as answered (app/commands.ts), older
 *   than a handler waits for the limit, carried out then; each is applied once (the run keeps the
 *   ids of the commands it applied) and answered once;
 * - graphs on the default branch, changed in the last day, that no run follows as they are (their
 *   latest run's pinned graph, and params, are not the file's): started or resumed then, as their
 *   push would have been (a compare-and-swap: once, however many reconcilers run).
 */
import { type RepoContext, statusOf } from "../github/client.ts";
import { RunStateDamageError, sayStateDamage } from "../github/damage.ts";
import { MAX_WAIT_MS, WriteBudgetSpent } from "../github/write-pacing.ts";
import { isGraphPath, paramsFileOf } from "../protocol/run-source.ts";
import { answered, carryOutComment, parseCommands } from "./commands.ts";
import { readParams } from "./context.ts";
import type { OwnLogin } from "./events.ts";
import { startGraph } from "./push.ts";
import { type FollowedGraph, type ReconcileOptions, reconcileRepository } from "./reconcile.ts";

/** How far back the reconciler looks: an hour's spent budget frees within the hour. */
export const WAITING_WINDOW_MS = 24 * 60 * 60_000;
/** A command younger than this may still be in its webhook handler's hands (which waits for the limit). */
export const WAITING_GRACE_MS = MAX_WAIT_MS + 5 * 60_000;
/** Pages of 100 comments read at most per pass. */
const PAGES = 10;

const iso = (at: number) => new Date(at).toISOString();

/**
 * The periodic sweep of a repository: every run reconciled (reconcile.ts), then, when `thorough`, the
 * commands and pushes that waited carried out.
 */
export async function sweepRepository(
  ctx: RepoContext,
  ownLogin: OwnLogin,
  options: ReconcileOptions = {},
): Promise<void> {
  const { followed } = await reconcileRepository(ctx, options);
  if (options.thorough ?? true) await carryOutWaiting(ctx, followed, ownLogin);
}

/** What a pass over the waiting work did: how much it carried out, and how much it left waiting. */
export interface WaitingWork {
  carried: number;
  /** Commands too young to be out of their own handler's hands, and work that failed: the next pass's. */
  left: number;
}

/**
 * Carries out the commands and pushes that waited; `followed`: what the graphs' latest runs follow;
 * `ownLogin`: who the orchestrator's own comments are by (only its answers mark a command done).
 */
export async function carryOutWaiting(
  ctx: RepoContext,
  followed: FollowedGraph[],
  ownLogin: OwnLogin,
): Promise<WaitingWork> {
  const work: WaitingWork = { carried: 0, left: 0 };
  await waitingCommands(ctx, work, await ownLogin());
  await waitingPushes(ctx, followed, work);
  return work;
}

/** One item of waiting work: a damaged run is said (once), a spent limit stops the pass, the rest goes on. */
async function attempt(
  ctx: RepoContext,
  work: WaitingWork,
  what: string,
  act: () => Promise<"said before" | void>,
): Promise<void> {
  try {
    if ((await act()) !== "said before") work.carried++;
  } catch (error) {
    if (error instanceof RunStateDamageError) return sayStateDamage(ctx, error);
    if (error instanceof WriteBudgetSpent) throw error;
    work.left++;
    ctx.log(`${what}: ${(error as Error).message} (the next pass tries again)`);
  }
}

/**
 * Who may steer a run, as GitHub relates a comment's author to the repository (write access is asked
 * of the API before anything is carried out): others' commands are not even looked at again.
 * https://docs.github.com/en/graphql/reference/enums#commentauthorassociation
 */
const STEERING = new Set(["OWNER", "MEMBER", "COLLABORATOR"]);

async function waitingCommands(ctx: RepoContext, work: WaitingWork, ownLogin: string): Promise<void> {
  const now = ctx.now();
  const repo = { owner: ctx.owner, repo: ctx.repo };
  const comments = [];
  // Newest first: however many comments came before it that day, a command and its answers (which
  // follow it) are read before the pages run out.
  for (let page = 1; page <= PAGES; page++) {
    const { data } = await ctx.octokit.rest.issues.listCommentsForRepo({
      ...repo,
      since: iso(now - WAITING_WINDOW_MS),
      sort: "created",
      direction: "desc",
      per_page: 100,
      page,
    });
    comments.push(...data);
    if (data.length < 100) break;
  }
  // Only the orchestrator's own answers say a command was carried out: anyone can write the marker.
  const done = new Set(comments.flatMap((c) => (c.user?.login === ownLogin ? answered(c.body ?? "") : [])));
  for (const c of comments.reverse()) {
    const commands = parseCommands(c.body ?? "");
    const author = c.user;
    if (commands.length === 0 || !author || done.has(String(c.id))) continue;
    if (
      author.type === "Bot"
        ? !ctx.config.allowedBots.includes(author.login)
        : !STEERING.has(c.author_association)
    )
      continue;
    const created = Date.parse(c.created_at);
    if (!(created >= now - WAITING_WINDOW_MS)) continue;
    // A reaction says nothing here: anyone may add one (the commands' answers say what was done).
    const skip = new Set(commands.flatMap((_, i) => (done.has(`${c.id}/${i}`) ? [i] : [])));
    if (skip.size === commands.length) continue;
    if (created > now - WAITING_GRACE_MS) {
      work.left++;
      continue;
    }
    const number = Number(/\/issues\/(\d+)$/.exec(c.issue_url)?.[1]);
    await attempt(ctx, work, `comment ${c.id}`, async () => {
      const { data: issue } = await ctx.octokit.rest.issues.get({ ...repo, issue_number: number });
      ctx.log(`comment ${c.id} on #${number}: its commands waited; carrying them out`);
      const comment = { id: c.id, body: c.body ?? "", user: { login: author.login, type: author.type } };
      await carryOutComment(ctx, { ...comment, issue: { number, body: issue.body } }, { late: true, skip });
    });
  }
}

async function waitingPushes(ctx: RepoContext, followed: FollowedGraph[], work: WaitingWork): Promise<void> {
  const repo = { owner: ctx.owner, repo: ctx.repo };
  const ref = ctx.defaultBranch;
  const since = iso(ctx.now() - WAITING_WINDOW_MS);
  // An empty repository (409) or one without the folder (404) has no graph to start.
  const absent = (error: unknown) => {
    if (statusOf(error) === 404 || statusOf(error) === 409) return null;
    throw error;
  };
  const recent = await ctx.octokit.rest.repos
    .listCommits({ ...repo, sha: ref, path: ".workflow", since, per_page: 1 })
    .catch(absent);
  if (!recent || recent.data.length === 0) return;
  const folder = await ctx.octokit.rest.repos.getContent({ ...repo, path: ".workflow", ref }).catch(absent);
  const listing = folder?.data;
  if (!Array.isArray(listing)) return;
  const names = new Set(listing.map((f) => f.path));
  let head: string | null = null;
  const headOf = async () =>
    (head ??= (await ctx.octokit.rest.repos.getBranch({ ...repo, branch: ref })).data.commit.sha);
  for (const file of listing) {
    if (file.type !== "file" || !isGraphPath(file.path)) continue;
    const run = followed.find((f) => f.path === file.path);
    if (run?.blob === file.sha) {
      if (!run.cyberian || !names.has(paramsFileOf(file.path))) continue;
      // A cyberian workflow's run follows its params file's values (a command may have added more).
      const params = await readParams(ctx, file.path, await headOf());
      if (Object.entries(params).every(([k, v]) => JSON.stringify(run.params[k]) === JSON.stringify(v)))
        continue;
    }
    await attempt(ctx, work, file.path, async () => {
      const at = await headOf();
      if (await refusedAlready(ctx, file.path, at)) return "said before";
      ctx.log(`${file.path}: no run follows it as it is on ${ref}; its push waited, carried out now`);
      // Who pushed is not known here: a graph that writes to other repositories waits for a push.
      await startGraph(ctx, file.path, at, {}, null);
    });
  }
}

/**
 * A graph whose push was refused (invalid, or a cyberian workflow without its params) has a failed
 * check run of its own on the commit: said once is enough.
 */
async function refusedAlready(ctx: RepoContext, path: string, commit: string): Promise<boolean> {
  const { data } = await ctx.octokit.rest.checks.listForRef({
    owner: ctx.owner,
    repo: ctx.repo,
    ref: commit,
    check_name: `agentrelay / ${path}`,
  });
  return data.total_count > 0;
}
