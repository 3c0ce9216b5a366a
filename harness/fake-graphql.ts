/**
 * The fake GitHub's GraphQL: a commit on a branch made with `createCommitOnBranch` (STALE_DATA when
 * `expectedHeadOid` is not the head: the state store's compare-and-swap), merged pull requests by
 * head and base branch, and a commit's files (a branch's head or a commit by id), with blob texts cut
 * at GraphQL's limit; a PR's last removal from the merge queue (fake-merge-queue.ts).
 */
import { enqueue, lastRemoval } from "./fake-merge-queue.ts";
import type { Reply } from "./fake-reply.ts";
import { blobId, type FakeGitHubState, mergedAtOf, treeAt } from "./fake-state.ts";

export function answerGraphql(
  gh: FakeGitHubState,
  { query, variables }: { query: string; variables: Record<string, unknown> },
): Reply {
  if (query.includes("enqueuePullRequest")) {
    const queued = enqueue(gh, String((variables.input as { pullRequestId: string }).pullRequestId));
    return "error" in queued
      ? [
          200,
          { data: { enqueuePullRequest: null }, errors: [{ type: "UNPROCESSABLE", message: queued.error }] },
        ]
      : [200, { data: { enqueuePullRequest: { mergeQueueEntry: { position: queued.position } } } }];
  }
  if (query.includes("REMOVED_FROM_MERGE_QUEUE_EVENT"))
    return [200, { data: { node: { timelineItems: { nodes: lastRemoval(gh, String(variables.id)) } } } }];
  if (query.includes("createCommitOnBranch")) {
    const input = variables.input as {
      branch: { branchName: string };
      expectedHeadOid: string;
      fileChanges: { additions?: { path: string; contents: string }[]; deletions?: { path: string }[] };
    };
    const head = gh.branches.get(input.branch.branchName);
    if (head !== input.expectedHeadOid) {
      return [
        200,
        {
          data: { createCommitOnBranch: null },
          errors: [
            {
              type: "STALE_DATA",
              message: `Expected branch to point to "${input.expectedHeadOid}" but it did not. Pull and try again.`,
            },
          ],
        },
      ];
    }
    const files: Record<string, string | null> = Object.fromEntries(
      (input.fileChanges.additions ?? []).map((a) => [
        a.path,
        Buffer.from(a.contents, "base64").toString("utf8"),
      ]),
    );
    for (const d of input.fileChanges.deletions ?? []) files[d.path] = null;
    const sha = gh.commit(input.branch.branchName, files, "state");
    return [200, { data: { createCommitOnBranch: { commit: { oid: sha } } } }];
  }
  // Merged pull requests by head and base branch, newest first (one alias per branch pair; see
  // https://docs.github.com/en/graphql/reference/objects#repository, pullRequests).
  if (query.includes("pullRequests(headRefName:")) {
    const repository: Record<string, unknown> = {};
    for (const m of query.matchAll(/(\w+): pullRequests\(headRefName: \$(\w+), baseRefName: \$(\w+)/g)) {
      const [, alias, head, base] = m as unknown as [string, string, string, string];
      const nodes = gh.pulls
        .filter((p) => p.merged && p.head === variables[head] && p.base === variables[base])
        .reverse()
        .slice(0, 1)
        .map((p) => ({ number: p.number, url: gh.pr(p).html_url, mergedAt: mergedAtOf(p) }));
      repository[alias] = { nodes };
    }
    return [200, { data: { repository } }];
  }
  // A commit named by id (the task Action), or a branch's head (the app).
  const sha = variables.oid
    ? gh.store.isCommit(String(variables.oid))
      ? String(variables.oid)
      : undefined
    : gh.branches.get(String(variables.ref).replace(/^refs\/heads\//, ""));
  if (!sha) return [200, { data: { repository: variables.oid ? { object: null } : { ref: null } } }];
  const files = gh.store.files(sha);
  const target: Record<string, unknown> = { oid: sha };
  if (query.includes("tree { entries { name } }"))
    target.tree = {
      entries: [...new Set(Object.keys(files).map((f) => f.split("/")[0]!))].map((name) => ({ name })),
    };
  if (query.includes("dir: file(")) {
    target.dir = treeAt(files, String(variables.dir), (text) => gh.blobObject(text));
    const legacy = files[String(variables.legacy)];
    target.legacy = legacy === undefined ? null : { oid: blobId(legacy), object: gh.blobObject(legacy) };
  }
  return [200, { data: { repository: variables.oid ? { object: target } : { ref: { target } } } }];
}
