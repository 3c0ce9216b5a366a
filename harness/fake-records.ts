/**
 * What the fake GitHub answers about its own records, for the reconciler that looks for work left
 * waiting (src/app/waiting.ts) and the app's periodic sweep: the installation and its repositories,
 * the repository's issue comments (with their authors, times and reaction counts), one issue, the
 * commits a branch received (newest first, by path and time), and a folder's listing (a commit's
 * check runs are fake-actions.ts's). Each as GitHub's REST API answers it:
 * https://docs.github.com/en/rest/issues/comments#list-issue-comments-for-a-repository,
 * https://docs.github.com/en/rest/commits/commits#list-commits,
 * https://docs.github.com/en/rest/repos/contents#get-repository-content (a directory: an array).
 */
import type { AddRoute } from "./fake-reply.ts";
import { blobId, type FakeGitHubState } from "./fake-state.ts";

const iso = (at: number) => new Date(at).toISOString();
export function recordRoutes(gh: FakeGitHubState, route: AddRoute) {
  const repository = () => ({
    id: 7,
    name: gh.repo,
    full_name: `${gh.owner}/${gh.repo}`,
    owner: { login: gh.owner },
    default_branch: "main",
  });
  route("GET", "\\/app\\/installations", () => [
    200,
    [{ id: gh.installationId, account: { login: gh.owner } }],
  ]);
  route("GET", "\\/installation\\/repositories", () => [
    200,
    { total_count: 1, repositories: [repository()] },
  ]);
  // Ordered by creation, oldest first, or newest first with `sort=created&direction=desc` (without
  // `sort`, GitHub ignores `direction`); `since` keeps those updated at or after it.
  route("GET", "REPO\\/issues\\/comments", (_m, _b, q) => {
    const since = q.get("since") ? Date.parse(q.get("since")!) : -Infinity;
    const newestFirst = q.get("sort") === "created" && q.get("direction") === "desc";
    // In the order they were made (GitHub's ids grow with time; the fake's tests may pick their own).
    const made = gh.comments.filter((c) => (c.updatedAt ?? c.at ?? 0) >= since);
    const listed = (newestFirst ? made.reverse() : made).map((c) => {
      const reactions = gh.reactions.filter((r) => r.comment === c.id);
      const count = (content: string) => reactions.filter((r) => r.content === content).length;
      return {
        id: c.id,
        body: c.body,
        user: c.user ?? { login: gh.settings.ownLogin, type: "Bot" },
        author_association: c.user ? (c.association ?? "NONE") : "NONE",
        created_at: iso(c.at ?? 0),
        updated_at: iso(c.updatedAt ?? c.at ?? 0),
        issue_url: `https://api.github.com${gh.base}/issues/${c.issue}`,
        performed_via_github_app: c.app ? { slug: "agentrelay" } : null,
        reactions: {
          total_count: reactions.length,
          "+1": count("+1"),
          "-1": count("-1"),
          eyes: count("eyes"),
        },
      };
    });
    const page = Number(q.get("page") ?? 1);
    const size = Number(q.get("per_page") ?? 30);
    return [200, listed.slice((page - 1) * size, page * size)];
  });
  route("GET", "REPO\\/issues\\/(\\d+)", (m) => {
    const n = Number(m[1]);
    const issue = gh.issues.find((i) => i.number === n);
    if (issue) return [200, { ...issue }];
    const pull = gh.pulls.find((p) => p.number === n);
    if (!pull) return [404, { message: "Not Found" }];
    return [200, { number: n, title: pull.title, body: pull.body, state: pull.state, pull_request: {} }];
  });
  route("GET", "REPO\\/commits", (_m, _b, q) => {
    const branch = q.get("sha") ?? "main";
    const path = q.get("path");
    const since = q.get("since") ? Date.parse(q.get("since")!) : -Infinity;
    const listed = gh.history
      .filter(
        (c) =>
          c.branch === branch &&
          c.at >= since &&
          (!path || c.paths.some((p) => p === path || p.startsWith(`${path}/`))),
      )
      .reverse()
      .map((c) => ({ sha: c.sha, commit: { message: c.message, committer: { date: iso(c.at) } } }));
    return [200, listed.slice(0, Number(q.get("per_page") ?? 30))];
  });
}

/** A folder at a commit, as the contents API lists it (its files and folders one level down), or null. */
export function folderListing(files: Record<string, string>, folder: string) {
  const prefix = `${folder}/`;
  const below = Object.keys(files).filter((f) => f.startsWith(prefix));
  if (below.length === 0) return null;
  const names = [...new Set(below.map((f) => f.slice(prefix.length).split("/")[0]!))].sort();
  return names.map((name) => {
    const path = `${prefix}${name}`;
    const text = files[path];
    return text === undefined
      ? { type: "dir", name, path, sha: "0".repeat(40) }
      : { type: "file", name, path, sha: blobId(text), size: Buffer.byteLength(text) };
  });
}

/** The app itself, its installation and the tokens minted for it, and the repository. */
export function appRoutes(gh: FakeGitHubState, route: AddRoute): void {
  route("POST", "\\/app\\/installations\\/(\\d+)\\/access_tokens", (_m, body) => {
    gh.tokens.push({
      permissions: (body.permissions ?? {}) as Record<string, string>,
      repositories: (body.repositories ?? []) as string[],
    });
    return [
      201,
      {
        token: `ghs_${"x".repeat(36)}${gh.tokens.length}`,
        expires_at: "2099-01-01T00:00:00Z",
        permissions: body.permissions ?? { contents: "write" },
      },
    ];
  });
  route("GET", "\\/app", () => [200, { id: 1, slug: "agentrelay", name: "agentrelay" }]);
  route("GET", "REPO\\/installation", () => [200, { id: gh.installationId }]);
  // The merge buttons are in the answer only for a person who administers the repository: a
  // GITHUB_TOKEN's (and an installation's without Administration) answer has no allow_*_merge
  // (s4k10503/velvet#320; integrations/terraform-provider-github#679).
  route("GET", "REPO", () => [
    200,
    {
      name: gh.repo,
      full_name: `${gh.owner}/${gh.repo}`,
      default_branch: "main",
      owner: { login: gh.owner, type: gh.settings.organization ? "Organization" : "User" },
      ...(gh.requester === "person"
        ? {
            allow_merge_commit: gh.settings.mergeMethods.merge,
            allow_squash_merge: gh.settings.mergeMethods.squash,
            allow_rebase_merge: gh.settings.mergeMethods.rebase,
          }
        : {}),
    },
  ]);
}
