/**
 * The fake GitHub's merge queue. A branch that requires one refuses a PR's direct merge with 405
 * "Changes must be made through the merge queue" (pascalgn/automerge-action#235); a PR joins it with
 * GraphQL's `enqueuePullRequest` (https://docs.github.com/en/graphql/reference/mutations#enqueuepullrequest).
 * The queue builds a merge group per PR on a `gh-readonly-queue/<base>/pr-<n>-<sha>` branch, on top of
 * the groups ahead of it, and the repository's CI reports on it from a `merge_group` event
 * (https://docs.github.com/en/repositories/configuring-branches-and-merges-in-your-repository/configuring-pull-request-merges/managing-a-merge-queue).
 * `settle` stands for that CI: a group whose check passes lands (the base moves to it, the PR is
 * merged), one that fails is dropped with the PR left open, and the groups behind it are rebuilt.
 * A PR the queue removed shows it on its timeline until a commit comes after (`lastRemoval`).
 */
import type { FakeGitHubState, FakePull } from "./fake-state.ts";

export const MERGE_QUEUE_REQUIRED = "Changes must be made through the merge queue";

interface Group {
  pull: FakePull;
  branch: string;
  sha: string;
}

const queues = new WeakMap<FakeGitHubState, Group[]>();

/** The groups waiting in the queue, first to land first. */
export const mergeGroups = (gh: FakeGitHubState): Group[] => queues.get(gh) ?? [];

/** A PR's node id as the fake gives it (the REST `node_id`). */
export const pullNodeId = (number: number): string => `PR_${number}`;

/** Builds a PR's merge group on top of the groups ahead of it; null on a conflict. */
function build(gh: FakeGitHubState, pull: FakePull, ahead: Group | undefined): Group | null {
  const head = gh.branches.get(pull.head)!;
  const branch = `gh-readonly-queue/${pull.base}/pr-${pull.number}-${head}`;
  gh.branches.set(branch, ahead?.sha ?? gh.branches.get(pull.base)!);
  const sha = gh.mergeInto(branch, pull.head, `Merge pull request #${pull.number}`);
  if (!sha) {
    gh.branches.delete(branch);
    return null;
  }
  return { pull, branch, sha };
}

/** `enqueuePullRequest`: the PR joins the queue of its base; an error for one not open or already in. */
export function enqueue(
  gh: FakeGitHubState,
  pullRequestId: string,
): { position: number } | { error: string } {
  const pull = gh.pulls.find((p) => pullNodeId(p.number) === pullRequestId);
  if (!pull || pull.state !== "open") return { error: "Pull request is not open" };
  const queue = queues.get(gh) ?? [];
  queues.set(gh, queue);
  if (queue.some((g) => g.pull === pull)) return { error: "Pull request is already in the merge queue" };
  const group = build(gh, pull, queue.filter((g) => g.pull.base === pull.base).at(-1));
  if (!group) return { error: "Pull request has merge conflicts" };
  queue.push(group);
  return { position: queue.length };
}

/**
 * A PR closed while queued leaves the queue, its group branch deleted, and the groups behind it are
 * rebuilt without it ("Removing a pull request from the merge queue", managing-a-merge-queue above).
 */
export function dequeue(gh: FakeGitHubState, pull: FakePull): void {
  const queue = queues.get(gh) ?? [];
  const at = queue.findIndex((g) => g.pull === pull);
  if (at < 0) return;
  const behind = queue.splice(at);
  for (const g of behind) gh.branches.delete(g.branch);
  for (const g of behind.slice(1)) {
    const rebuilt = build(gh, g.pull, queue.filter((q) => q.pull.base === g.pull.base).at(-1));
    if (rebuilt) queue.push(rebuilt);
  }
}

/**
 * The `merge_group` CI of the first group of each base: `passes` decides; a group that passes lands
 * (the base fast-forwards to it), one that fails leaves the queue and the groups behind it are rebuilt.
 * The check names of the group's head are recorded as check runs named `merge_group`.
 */
export function settle(gh: FakeGitHubState, passes: (pull: FakePull) => boolean = () => true): void {
  const queue = queues.get(gh) ?? [];
  while (queue.length > 0) {
    const group = queue.shift()!;
    const ok = passes(group.pull);
    gh.setCheck(group.sha, "merge_group", ok ? "success" : "failure");
    gh.branches.delete(group.branch);
    if (ok) {
      gh.branches.set(group.pull.base, group.sha);
      const mergedHead = gh.branches.get(group.pull.head);
      Object.assign(group.pull, { merged: true, state: "closed", mergedAt: gh.clock.now(), mergedHead });
      gh.onMerge(group.pull);
      continue;
    }
    // Its timeline says why ("removed this pull request from the merge queue due to failed status
    // checks", as flowglad/onton#379 quotes it): a RemovedFromMergeQueueEvent, before any later commit.
    group.pull.removedFromQueue = { reason: "failed status checks", head: gh.branches.get(group.pull.head)! };
    // The groups behind a failed one held its changes: rebuilt without them.
    const behind = queue.splice(0);
    for (const g of behind) {
      gh.branches.delete(g.branch);
      const rebuilt = build(gh, g.pull, queue.filter((q) => q.pull.base === g.pull.base).at(-1));
      if (rebuilt) queue.push(rebuilt);
    }
  }
}

/**
 * The last of a PR's timeline items of the kinds RemovedFromMergeQueueEvent, PullRequestCommit and
 * HeadRefForcePushedEvent (https://docs.github.com/en/graphql/reference/objects#removedfrommergequeueevent):
 * the removal while the head is the one it was removed at, else a commit (or nothing).
 */
export function lastRemoval(gh: FakeGitHubState, pullRequestId: string): object[] {
  const pull = gh.pulls.find((p) => pullNodeId(p.number) === pullRequestId);
  const removed = pull?.removedFromQueue;
  if (!pull || !removed) return [];
  return gh.branches.get(pull.head) === removed.head
    ? [{ __typename: "RemovedFromMergeQueueEvent", reason: removed.reason }]
    : [{ __typename: "PullRequestCommit" }];
}
