/**
 * The fake GitHub's git data: a file's contents (raw, or base64 up to 1 MB), branches and their
 * protection and rules, refs (created, moved by a push, deleted), blobs, trees and commits made
 * through the API, and the comparison of two branches, each as GitHub's REST API answers it.
 */
import { folderListing } from "./fake-records.ts";
import { workflowsRefusal } from "./fake-repo-settings.ts";
import type { AddRoute } from "./fake-reply.ts";
import { type FakeGitHubState, treeOf } from "./fake-state.ts";

/**
 * A push that puts an open PR's head commit on its base makes GitHub mark the PR merged by itself,
 * merged by whoever pushed (refined-github/sandbox#163: "GitHub automatically detects this and marks
 * the PR as merged"; Mergifyio/mergify#364: "GitHub can close Pull Request automatically and set all
 * merge related fields if all commits of the PR appear on the base branch ... sets merged_by to" the
 * pusher), with a `pull_request` closed event whose `merged` is true, sent as the pusher.
 */
function mergedByPush(gh: FakeGitHubState, branch: string): void {
  const base = gh.branches.get(branch)!;
  for (const p of gh.pulls.filter((p) => p.base === branch && p.state === "open")) {
    const head = gh.branches.get(p.head);
    if (!head || gh.store.aheadBy(base, head) > 0) continue;
    Object.assign(p, { merged: true, state: "closed", mergedAt: gh.clock.now(), mergedHead: head });
    gh.onMerge(p);
  }
}

export function gitRoutes(gh: FakeGitHubState, route: AddRoute): void {
  route("GET", "REPO\\/contents\\/(.+)", (m, _b, q, accept) => {
    const ref = q.get("ref") ?? "main";
    const known = gh.store.isCommit(ref) || gh.branches.has(ref);
    const text = known ? gh.store.file(ref, m[1]!) : undefined;
    // A folder: its entries (https://docs.github.com/en/rest/repos/contents#get-repository-content).
    const folder =
      known && text === undefined ? folderListing(gh.store.files(ref), m[1]!.replace(/\/+$/, "")) : null;
    if (folder) return [200, folder];
    if (text === undefined) return [404, { message: "Not Found" }];
    if (accept.includes(".raw")) return [200, text];
    // The JSON form carries files up to 1 MB; past it, `content` is empty and `encoding` "none", and
    // only the raw form has the text, up to 100 MB
    // (https://docs.github.com/en/rest/repos/contents#get-repository-content, "File size limits").
    const size = Buffer.byteLength(text);
    const whole = size <= 1024 * 1024;
    return [
      200,
      {
        type: "file",
        path: m[1],
        size,
        encoding: whole ? "base64" : "none",
        content: whole ? Buffer.from(text).toString("base64") : "",
      },
    ];
  });
  route("GET", "REPO\\/branches\\/(.+)", (m) => {
    const sha = gh.branches.get(m[1]!);
    return sha
      ? [200, { name: m[1], commit: { sha }, ...gh.settings.branchProtection(m[1]!) }]
      : [404, { message: "Branch not found" }];
  });
  // Paginated, 30 rules a page by default (https://docs.github.com/en/rest/repos/rules#get-rules-for-a-branch),
  // with a Link header to the next page, as GitHub gives it.
  route("GET", "REPO\\/rules\\/branches\\/([^?]+)", (m, _body, query) => {
    const all = gh.settings.rulesApi(m[1]!);
    const perPage = Math.min(100, Number(query.get("per_page") ?? 30) || 30);
    const page = Math.max(1, Number(query.get("page") ?? 1) || 1);
    const rules = all.slice((page - 1) * perPage, page * perPage);
    const next = page * perPage < all.length;
    // GitHub's link is absolute; here it is relative to the API's root, which the fake does not know
    // (api.github.com through nock, or the stand-in's address): clients put their base URL before it.
    const link = `<${gh.base}/rules/branches/${m[1]}?per_page=${perPage}&page=${page + 1}>; rel="next"`;
    return next ? [200, rules, { link }] : [200, rules];
  });
  route("GET", "REPO\\/git\\/ref\\/heads\\/(.+)", (m) => {
    const sha = gh.branches.get(m[1]!);
    return sha
      ? [200, { ref: `refs/heads/${m[1]}`, object: { sha, type: "commit" } }]
      : [404, { message: "Not Found" }];
  });
  route("GET", "REPO\\/git\\/matching-refs\\/heads\\/(.*)", (m) => [
    200,
    [...gh.branches]
      .filter(([b]) => b.startsWith(m[1]!))
      .map(([b, sha]) => ({ ref: `refs/heads/${b}`, object: { sha, type: "commit" } })),
  ]);
  route("POST", "REPO\\/git\\/refs", (_m, body) => {
    const name = String(body.ref).replace(/^refs\/heads\//, "");
    if (gh.branches.has(name)) return [422, { message: "Reference already exists" }];
    gh.branches.set(name, String(body.sha));
    return [201, { ref: body.ref, object: { sha: body.sha } }];
  });
  route("DELETE", "REPO\\/git\\/refs\\/heads\\/(.+)", (m) => {
    if (!gh.branches.delete(m[1]!)) return [422, { message: "Reference does not exist" }];
    return [204];
  });
  route("GET", "REPO\\/git\\/blobs\\/([0-9a-f]{40})", (m) => {
    const text = gh.blobs.get(m[1]!);
    return text === undefined
      ? [404, { message: "Not Found" }]
      : [
          200,
          {
            sha: m[1],
            size: Buffer.byteLength(text),
            encoding: "base64",
            content: Buffer.from(text).toString("base64"),
          },
        ];
  });
  route("POST", "REPO\\/git\\/trees", (_m, body) => {
    const files = Object.fromEntries(
      // `sha: null` deletes the path (https://docs.github.com/en/rest/git/trees#create-a-tree).
      (body.tree as { path: string; content?: string; sha?: string | null }[]).map((t) => [
        t.path,
        t.sha === null ? null : (t.content ?? ""),
      ]),
    );
    const sha = `tree${gh.newId()}`;
    gh.trees.set(sha, files);
    return [201, { sha }];
  });
  route("POST", "REPO\\/git\\/commits", (_m, body) => {
    const parents = body.parents as string[];
    const parent = parents[0];
    // A merge commit whose tree is its second parent's, that parent holding the first: the tree a
    // merge of the two builds (the only two-parent commit agentrelay makes: fast-forward.ts).
    if (parents.length === 2) {
      const [base, head] = parents as [string, string];
      if (String(body.tree) !== treeOf(gh.store, head) || gh.store.aheadBy(head, base) > 0)
        return [422, { message: "the fake makes two-parent commits only of a head that holds its base" }];
      const sha = gh.store.merge(base, head, String(body.message))!;
      gh.commitsMade.push({ sha, message: String(body.message), parents });
      return [201, { sha }];
    }
    // A commit with its parent's own tree (treeOf): no change.
    const files =
      parent !== undefined && String(body.tree) === treeOf(gh.store, parent)
        ? {}
        : gh.trees.get(String(body.tree))!;
    const sha = gh.store.commit(parent, files, String(body.message));
    gh.commitsMade.push({ sha, message: String(body.message), parents: body.parents as string[] });
    return [201, { sha }];
  });
  route("GET", "REPO\\/git\\/commits\\/([0-9a-f]{40})", (m) =>
    gh.store.isCommit(m[1]!)
      ? [
          200,
          {
            sha: m[1],
            tree: { sha: treeOf(gh.store, m[1]!) },
            parents: gh.store.log(m[1]!)[0]!.parents.map((sha) => ({ sha })),
          },
        ]
      : [404, { message: "Not Found" }],
  );
  route("PATCH", "REPO\\/git\\/refs\\/heads\\/(.+)", (m, body) => {
    if (!gh.branches.has(m[1]!)) return [422, { message: "Reference does not exist" }];
    // Without `force` (false by default), a move that is not a fast-forward is refused: 422 "Update
    // is not a fast forward" (https://docs.github.com/en/rest/git/refs#update-a-reference).
    if (body.force !== true && gh.store.aheadBy(String(body.sha), gh.branches.get(m[1]!)!) > 0)
      return [422, { message: "Update is not a fast forward" }];
    const workflows = gh.mayChangeWorkflows()
      ? []
      : gh.workflowsChanged(gh.branches.get(m[1]!)!, String(body.sha));
    if (workflows.length > 0) return workflowsRefusal(workflows[0]!);
    const passed = (name: string) =>
      gh.ciChecks.some(
        (c) =>
          c.sha === body.sha &&
          c.name === name &&
          ["success", "neutral", "skipped"].includes(c.conclusion ?? ""),
      );
    const rule = gh.settings.directUpdateRefusal(m[1]!, gh.settings.mergeQueue.has(m[1]!), passed);
    // Rules bind people too (only a bypass list, not modelled, exempts anyone).
    if (rule) return [422, { message: rule }];
    gh.branches.set(m[1]!, String(body.sha));
    gh.refUpdates.push({ branch: m[1]!, sha: String(body.sha) });
    gh.onBranchMoved(m[1]!);
    mergedByPush(gh, m[1]!);
    return [200, { ref: `refs/heads/${m[1]}`, object: { sha: body.sha, type: "commit" } }];
  });
  route("GET", "REPO\\/compare\\/(.+)\\.\\.\\.(.+)", (m) => {
    // Branches or commits (https://docs.github.com/en/rest/commits/commits#compare-two-commits).
    const [base, head] = [m[1]!, m[2]!].map((ref) => (gh.store.isCommit(ref) ? ref : gh.branch(ref))) as [
      string,
      string,
    ];
    const ahead = gh.store.aheadBy(base, head);
    const behind = gh.store.aheadBy(head, base);
    return [
      200,
      {
        ahead_by: ahead,
        behind_by: behind,
        status: ahead && behind ? "diverged" : ahead ? "ahead" : behind ? "behind" : "identical",
        total_commits: ahead,
        commits: [],
        files: [],
      },
    ];
  });
}
