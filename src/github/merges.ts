/**
 * Merges on GitHub as the repository allows them: a method the repository and the branch's rules
 * accept (branch-policy.ts; a refused one is followed by the next), a base that moved asked again,
 * a PR GitHub is still working out read again, a required check still running not asked at all (a
 * read, not a refused write); whatever GitHub refuses that is not a race is a one-line Wait (a person
 * may have to act), or a reason that fails the task (a required check that failed).
 */
import type { PullRequest } from "../engine/types.ts";
import { type BranchPolicy, METHOD_REFUSED, noMethodReason, readBranchPolicy } from "./branch-policy.ts";
import { messageOf, type RepoContext, statusOf } from "./client.ts";
import { rateLimitWait } from "./write-pacing.ts";

/**
 * GitHub's 405 when the base moved under a merge: the merge is asked again, as a PR is read again while
 * GitHub computes whether it can merge; a few times, a little later each time.
 */
export const BASE_MOVED = /Base branch was modified/i;
const MERGE_TRIES = 3;
const ASK_AGAIN_MS = 300;
/** GitHub's 405 while a required status check has not reported, and once it failed. */
export const CHECK_EXPECTED = /Required status checks? "?([^"]*)"? (?:is|are) expected/i;
const CHECK_FAILING = /Required status checks? "?([^"]*)"? (?:is|are) failing/i;
/** GitHub's refusal of a change to `.github/workflows/` by a token without the `workflows` permission. */
export const WORKFLOWS_REFUSED = /create or update workflow `?([^`\s]+)`?/i;
/** GitHub's 405 for a branch whose rules require a merge queue. */
export const MERGE_QUEUE = /must be made through the merge queue/i;
/** The conclusions of a check run that passes (what GitHub's required checks accept). */
const PASSED = new Set(["success", "neutral", "skipped"]);

/** A run's wait GitHub causes, in one line; `person`: only a person can end it. */
export interface Wait {
  line: string;
  person: boolean;
}

/** The key of the wait of a repository the installation cannot reach (`OWNER/NAME`). */
export const repositoryWaitKey = (fullName: string): string => `repository:${fullName}`;

/**
 * A repository the app's installation no longer reaches (GitHub answered `status`): what waits there
 * waits for a person to add it back, and goes on by itself once they have.
 */
export const lostRepositoryWait = (fullName: string, status: number | undefined): Wait => ({
  person: true,
  line: `${fullName}: the app can no longer reach it (GitHub answered ${status}): add it back to the app's installation; its work waits and goes on by itself`,
});

/** The key of a task's or a workstream's wait. */
export const waitKey = (subject: { task: string } | { workstream: string }): string =>
  "task" in subject ? `task:${subject.task}` : `workstream:${subject.workstream}`;

/**
 * What a merge came to. `moved`: the PR's head is no longer the `sha` the merge was pinned to.
 * `base_moved`: a merge pinned to a verified head found the base modified (not asked again: what
 * would merge is no longer what was verified). `failedOn`: a required check failed on that head
 * commit (with `reason`, the task's failure).
 */
export type Merged =
  | "merged"
  | "closed"
  | "conflicted"
  | "moved"
  | "base_moved"
  | { reason: string; failedOn?: string }
  | { wait: Wait };

export const oneLine = (text: string): string => text.replace(/\s*\n+\s*/g, " ").trim();

/** A 403 that is GitHub saying no (not a rate limit, which the pacing waits out): its error, or null. */
export function refusal(error: unknown, ctx: Pick<RepoContext, "now">): unknown {
  return statusOf(error) === 403 && rateLimitWait(error, ctx.now()) === null ? error : null;
}

/**
 * Whether a check run is one the policy requires: its name, and, for a check bound to an app, that
 * app's (a same-named check from another app satisfies nothing: branch-policy.ts, `checkApps`).
 */
function counts(policy: BranchPolicy, run: { name: string; app?: { id?: number } | null }): boolean {
  if (!policy.requiredChecks.includes(run.name)) return false;
  const bound = policy.checkApps?.[run.name];
  return bound === undefined || run.app?.id === bound;
}

export class Merges {
  /** Commits this handler's merges made, by the branch merged into: a new branch starts from them. */
  readonly mergedInto = new Map<string, string>();
  /** PRs whose merge waits only for required checks GitHub is running now (they end by themselves). */
  readonly checksRunning = new Set<number>();
  /** What the branches merged into allow, read once per handler. */
  private readonly policies = new Map<string, Promise<BranchPolicy>>();
  private repository?: Promise<{
    allow_merge_commit?: boolean;
    allow_squash_merge?: boolean;
    allow_rebase_merge?: boolean;
  }>;

  constructor(private readonly ctx: RepoContext) {}

  private get repo() {
    return { owner: this.ctx.owner, repo: this.ctx.repo };
  }

  /**
   * Merges the target into a branch before its PR opens, so that the PR is up to date (and passes a
   * "require branches to be up to date" rule): a merge commit made by GitHub, no agent. A conflict is
   * left for the PR's merge, which starts a resolution.
   */
  async bringUpToDate(branch: string, target: string): Promise<Wait | null> {
    try {
      await this.ctx.octokit.rest.repos.merge({
        ...this.repo,
        base: branch,
        head: target,
        commit_message: `Merge ${target} into ${branch}`,
      });
      return null;
    } catch (error) {
      if (statusOf(error) === 409 || statusOf(error) === 404) return null; // conflict; or no branch, said by the PR
      // GitHub refuses the merge commit (a workflow file changed on the target, which no token of
      // agentrelay's may write; a rule that requires linear history): the PR opens as it is, and
      // merges unless the target requires branches to be up to date, which a person's "Update
      // branch" then does.
      const refused = refusal(error, this.ctx) ?? (statusOf(error) === 422 ? error : null);
      if (!refused) throw error;
      const workflow = WORKFLOWS_REFUSED.exec(messageOf(error))?.[1];
      this.ctx.log(`${branch}: not brought up to date with ${target}: ${oneLine(messageOf(error))}`);
      return {
        person: false,
        line: workflow
          ? `${branch} was not brought up to date with ${target}: ${target} changed ${workflow}, and GitHub lets no token of agentrelay's write workflow files: its PR merges as it is; if ${target} requires branches to be up to date, press "Update branch" on it`
          : `${branch} was not brought up to date with ${target}: ${oneLine(messageOf(error))}`,
      };
    }
  }

  /** The policy of the branch merged into (read once per handler; the repository's settings once). */
  policy(base: string): Promise<BranchPolicy> {
    let policy = this.policies.get(base);
    if (!policy) {
      policy = readBranchPolicy(this.ctx.octokit, this.ctx.owner, this.ctx.repo, base, {
        repository: this.repositorySettings(),
        protection: false,
      });
      this.policies.set(base, policy);
      policy.catch(() => this.policies.delete(base));
    }
    return policy;
  }

  /** The repository's settings, read once per handler. */
  private repositorySettings() {
    if (!this.repository) {
      this.repository = this.ctx.octokit.rest.repos.get(this.repo).then((r) => r.data);
      this.repository.catch(() => (this.repository = undefined));
    }
    return this.repository;
  }

  /**
   * The PR as GitHub answers once it has computed whether it can merge: `mergeable` is null while it
   * computes, and GitHub asks to read again in a few moments (a few times here, then it waits).
   */
  private async mergeability(pr: PullRequest) {
    for (let reads = 1; ; reads++) {
      const { data } = await this.ctx.octokit.rest.pulls.get({ ...this.repo, pull_number: pr.number });
      if (data.mergeable !== null || data.state !== "open" || reads >= MERGE_TRIES) return data;
      await new Promise((done) => setTimeout(done, ASK_AGAIN_MS * reads));
    }
  }

  /**
   * Merges a PR the way a person would: never bypassing protection, waiting while checks are pending,
   * by a method the repository and the branch's rules allow. With `sha`, only while the PR's head is
   * that commit (GitHub answers 409 "Head branch was modified" otherwise:
   * https://docs.github.com/en/rest/pulls/pulls#merge-a-pull-request).
   */
  async merge(pr: PullRequest, title: string, base: string, head: string, sha?: string): Promise<Merged> {
    const policy = await this.policy(base);
    const none = noMethodReason(base, policy);
    if (none) return { wait: { person: true, line: `#${pr.number} cannot merge: ${none}` } };
    const running = await this.requiredRunning(head, policy);
    if (running) {
      this.checksRunning.add(pr.number);
      return this.notYet(pr, `Required status check "${running}" is expected.`);
    }
    const methods = [...policy.methods];
    for (let tries = 1; ; tries++) {
      try {
        const { data } = await this.ctx.octokit.rest.pulls.merge({
          ...this.repo,
          pull_number: pr.number,
          merge_method: methods[0]!,
          commit_title: title,
          ...(sha ? { sha } : {}),
        });
        if (data.sha) this.mergedInto.set(base, data.sha);
        return "merged";
      } catch (error) {
        const refused = refusal(error, this.ctx);
        if (refused) {
          const workflow = WORKFLOWS_REFUSED.exec(messageOf(error))?.[1];
          return {
            wait: {
              person: true,
              line: workflow
                ? `#${pr.number} changes ${workflow}, and GitHub lets no token of agentrelay's merge a change to a workflow file: merge it yourself (the run goes on by itself)`
                : `GitHub refuses to merge #${pr.number}: ${oneLine(messageOf(error))}`,
            },
          };
        }
        const status = statusOf(error);
        if (status !== 405 && status !== 409) throw error;
        const message = messageOf(error);
        if (MERGE_QUEUE.test(message)) return this.enqueue(pr, base);
        // Another merge landed on the base meanwhile: GitHub asks for the merge again, so it is asked,
        // unless the merge is of a verified head, which was verified with the base as it was.
        if (BASE_MOVED.test(message) && sha) return "base_moved";
        if (BASE_MOVED.test(message) && tries < MERGE_TRIES) {
          await new Promise((done) => setTimeout(done, ASK_AGAIN_MS * tries));
          continue;
        }
        // A method a rule refuses that the token could not read (branch protection's linear history):
        // the next allowed method.
        if (METHOD_REFUSED.test(message) && methods.length > 1) {
          this.ctx.log(`PR #${pr.number}: ${methods[0]} refused (${oneLine(message)}); trying ${methods[1]}`);
          methods.shift();
          continue;
        }
        const data = await this.mergeability(pr);
        if (data.merged) return "merged";
        if (data.state === "closed") return "closed";
        if (data.mergeable === false && data.mergeable_state === "dirty") return "conflicted";
        // Someone pushed to the branch after the commit it was pinned to (a verified one).
        if (sha && data.head.sha !== sha) return "moved";
        this.ctx.log(`PR #${pr.number} is not mergeable yet (${data.mergeable_state}): ${message}`);
        if (data.mergeable === null)
          return { wait: { person: false, line: `GitHub is working out whether #${pr.number} can merge` } };
        return this.notYet(pr, message, data.head.sha);
      }
    }
  }

  /**
   * A required check still running on the branch's head, if one is: the merge would be refused, and a
   * read costs none of the hour's writes. (A check not found may be a commit status: GitHub decides.)
   */
  private async requiredRunning(head: string, policy: BranchPolicy): Promise<string | null> {
    if (policy.requiredChecks.length === 0) return null;
    return (
      (await this.checkRuns(head)).find((c) => counts(policy, c) && c.status !== "completed")?.name ?? null
    );
  }

  /**
   * The latest check runs on a commit or branch (https://docs.github.com/en/rest/checks/runs#list-check-runs-for-a-git-reference);
   * none for a ref GitHub does not know (the merge says why).
   */
  private async checkRuns(ref: string) {
    try {
      const { data } = await this.ctx.octokit.rest.checks.listForRef({
        ...this.repo,
        ref,
        filter: "latest",
        per_page: 100,
      });
      return data.check_runs;
    } catch (error) {
      if ([404, 422].includes(statusOf(error) ?? 0)) return [];
      throw error;
    }
  }

  /**
   * What the checks `base` requires (its rules' and branch protection's: branch-policy.ts) that failed
   * on `sha` said, their names, conclusions and the start of their summaries; null when none did (a
   * commit status, not a check run, or one that passes or still runs). What a repair is told.
   */
  async failedChecks(base: string, sha: string): Promise<string | null> {
    const policy = await readBranchPolicy(this.ctx.octokit, this.ctx.owner, this.ctx.repo, base, {
      repository: this.repositorySettings(),
    });
    if (policy.requiredChecks.length === 0) return null;
    const failed = (await this.checkRuns(sha)).filter(
      (c) => counts(policy, c) && c.status === "completed" && !PASSED.has(c.conclusion ?? ""),
    );
    if (failed.length === 0) return null;
    return failed
      .map((c) =>
        [`${c.name}: ${c.conclusion}`, c.output?.title, c.output?.summary?.slice(0, 1_500)]
          .filter(Boolean)
          .join("\n"),
      )
      .join("\n\n");
  }

  /**
   * A PR into a branch that requires a merge queue joins the queue, as a person's "Merge when ready"
   * does (https://docs.github.com/en/graphql/reference/mutations#enqueuepullrequest): the queue's
   * `merge_group` checks stand in for the merge, and the PR's closing event says it landed.
   */
  private async enqueue(pr: PullRequest, base: string): Promise<Merged> {
    const { data } = await this.ctx.octokit.rest.pulls.get({ ...this.repo, pull_number: pr.number });
    if (data.merged) return "merged";
    const removed = await this.removedFromQueue(data.node_id);
    if (removed !== null) {
      // Enqueued again as it is, it would be removed again, forever: a group that failed its checks is
      // a failed required check (repaired, or failing the workstream), a conflict a conflict.
      if (/conflict/i.test(removed)) return "conflicted";
      const line = `the merge queue removed #${pr.number}: ${removed || "no reason given"}`;
      return /check/i.test(removed)
        ? { reason: line, failedOn: data.head.sha }
        : { wait: { person: true, line: `${line}; add it to the queue again yourself once it can land` } };
    }
    try {
      await this.ctx.octokit.graphql(
        `mutation($input: EnqueuePullRequestInput!) { enqueuePullRequest(input: $input) { mergeQueueEntry { position } } }`,
        { input: { pullRequestId: data.node_id } },
      );
    } catch (error) {
      // Already queued (an earlier answer lost) is where the PR should be; anything else, a person.
      if (!/already in the merge queue/i.test(messageOf(error)))
        return {
          wait: {
            person: true,
            line: `#${pr.number} could not join ${base}'s merge queue: ${oneLine(messageOf(error))}; add it yourself`,
          },
        };
    }
    this.ctx.log(`PR #${pr.number}: enqueued in ${base}'s merge queue`);
    return {
      wait: {
        person: false,
        line: `#${pr.number} is in ${base}'s merge queue: its merge_group checks decide`,
      },
    };
  }

  /**
   * Why the merge queue removed the PR, when nothing was pushed to it since (its timeline's last
   * removal or commit: https://docs.github.com/en/graphql/reference/objects#removedfrommergequeueevent;
   * GitHub removes a PR whose group "failed required status checks or conflicts with the base
   * branch", and its timeline shows why: managing-a-merge-queue#failing-ci); null otherwise.
   */
  private async removedFromQueue(id: string): Promise<string | null> {
    const answer = await this.ctx.octokit.graphql<{
      node: { timelineItems: { nodes: { __typename: string; reason?: string | null }[] } } | null;
    }>(
      `query($id: ID!) { node(id: $id) { ... on PullRequest { timelineItems(last: 1, itemTypes: [REMOVED_FROM_MERGE_QUEUE_EVENT, PULL_REQUEST_COMMIT, HEAD_REF_FORCE_PUSHED_EVENT]) { nodes { __typename ... on RemovedFromMergeQueueEvent { reason } } } } } }`,
      { id },
    );
    const last = answer.node?.timelineItems.nodes.at(-1);
    return last?.__typename === "RemovedFromMergeQueueEvent" ? (last.reason ?? "") : null;
  }

  /**
   * Whether the commit a merge made holds exactly the tree of `verified` (the integration branch with
   * the target it was checked with merged in). GitHub's merge pins the PR's head (`sha`) but not its
   * base: a push to the target after the last look at it lands a tree nobody verified
   * (https://docs.github.com/en/rest/pulls/pulls#merge-a-pull-request has no condition on the base).
   */
  async landedAsVerified(landed: string, verified: { base: string; head: string }): Promise<boolean> {
    const commit = async (sha: string) =>
      (await this.ctx.octokit.rest.git.getCommit({ ...this.repo, commit_sha: sha })).data;
    const [made, head] = [await commit(landed), await commit(verified.head)];
    if (made.tree.sha === head.tree.sha) return true;
    // A verification that left the target's merge to GitHub (the target changed a workflow file, which
    // no push of ours may bring) verified the merge of its head into that target: what a merge commit
    // of exactly those two parents holds.
    const parents = made.parents.map((p) => p.sha);
    return parents.length === 2 && parents[0] === verified.base && parents[1] === verified.head;
  }

  /** Why GitHub does not merge a PR now, in one line: a failed required check fails it; the rest wait. */
  private notYet(pr: PullRequest, message: string, head?: string): Merged {
    const failing = CHECK_FAILING.exec(message);
    if (failing)
      return {
        reason: `the required check ${failing[1]} failed on its PR`,
        ...(head ? { failedOn: head } : {}),
      };
    const expected = CHECK_EXPECTED.exec(message);
    if (expected) {
      // Expected checks come by themselves, except where the orchestrator opened the PR as GITHUB_TOKEN.
      const token = this.ctx.config.workflow?.token === "github_token";
      return {
        wait: {
          person: token,
          line: token
            ? `#${pr.number} waits for the required check ${expected[1]}, which no workflow runs by itself on PRs GITHUB_TOKEN opens: press "Approve workflows to run" on #${pr.number} where GitHub offers it, or register an app (docs/github.md, Tokens)`
            : `#${pr.number} waits for the required check ${expected[1]}`,
        },
      };
    }
    return { wait: { person: true, line: `GitHub does not merge #${pr.number}: ${oneLine(message)}` } };
  }
}
