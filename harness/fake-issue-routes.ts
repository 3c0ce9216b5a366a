/**
 * The fake GitHub's issues and their comments: listing, opening and closing issues, the comments of
 * one (with whether the app wrote them), comments made and edited, reactions, and a collaborator's
 * permission (who may steer a run by a slash command).
 */
import type { AddRoute } from "./fake-reply.ts";
import type { FakeGitHubState } from "./fake-state.ts";

export function issueRoutes(gh: FakeGitHubState, route: AddRoute): void {
  const issue = (n: number) => gh.issues.find((i) => i.number === n);
  route("GET", "REPO\\/issues", (_m, _b, q) => [
    200,
    gh.issues
      .filter((i) => !q.get("state") || q.get("state") === "all" || i.state === q.get("state"))
      .map((i) => ({ number: i.number, title: i.title, body: i.body, state: i.state })),
  ]);
  route("POST", "REPO\\/issues", (_m, body) => {
    const n = gh.issues.length + gh.pulls.length + 1;
    gh.issues.push({
      number: n,
      title: String(body.title),
      body: String(body.body ?? ""),
      state: "open",
    });
    return [201, { number: n, html_url: `https://github.com/${gh.owner}/${gh.repo}/issues/${n}` }];
  });
  route("PATCH", "REPO\\/issues\\/(\\d+)", (m, body) => {
    const i = issue(Number(m[1]));
    if (i && body.state) i.state = String(body.state);
    return [200, { number: Number(m[1]) }];
  });
  route("GET", "REPO\\/issues\\/(\\d+)\\/comments", (m) => [
    200,
    gh.comments
      .filter((c) => c.issue === Number(m[1]))
      .map((c) => ({
        id: c.id,
        body: c.body,
        performed_via_github_app: c.app ? { slug: "agentrelay" } : null,
      })),
  ]);
  route("POST", "REPO\\/issues\\/(\\d+)\\/comments", (m, body) => {
    const at = gh.clock.now();
    const c = { id: gh.newId(), issue: Number(m[1]), body: String(body.body), app: true, at };
    gh.comments.push(c);
    return [201, { id: c.id }];
  });
  route("PATCH", "REPO\\/issues\\/comments\\/(\\d+)", (m, body) => {
    const c = gh.comments.find((x) => x.id === Number(m[1]));
    if (!c) return [404, { message: "Not Found" }];
    c.body = String(body.body);
    c.updatedAt = gh.clock.now();
    return [200, { id: c.id }];
  });
  route("POST", "REPO\\/issues\\/comments\\/(\\d+)\\/reactions", (m, body) => {
    gh.reactions.push({ comment: Number(m[1]), content: String(body.content) });
    return [201, { id: gh.newId() }];
  });
  // "Get repository permissions for a user": `permission` is the legacy base role (admin, write, read,
  // none), "the maintain role is mapped to write and the triage role is mapped to read"; `role_name` is
  // the role itself, custom roles included
  // (https://docs.github.com/en/rest/collaborators/collaborators#get-repository-permissions-for-a-user).
  // `permissions` holds each login's role in this repository, however GitHub would reach it: "the
  // highest role assigned to the collaborator after considering all sources of grants, including: repo,
  // teams, organization, and enterprise" (the same page). A login it does not name is no collaborator:
  // `none`, with an empty `role_name`, as a workflow's GITHUB_TOKEN was measured to get for one (a
  // third party's measurement; the page lists only 200 and "404 Resource not found", which the app
  // takes as `none` too).
  route("GET", "REPO\\/collaborators\\/([^/]+)\\/permission", (m) => {
    const role = gh.permissions.get(m[1]!) ?? "none";
    const legacy: Record<string, string> = { maintain: "write", triage: "read" };
    const permission = legacy[role] ?? role;
    return [200, { permission, role_name: role === "none" ? "" : role, user: { login: m[1] } }];
  });
}
