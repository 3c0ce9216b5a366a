/**
 * The fake GitHub's rules about events and repository settings, each as GitHub documents it (the
 * sources are cited in harness/fake-repo-settings.ts and harness/fake-events.ts): on by default, so
 * that every other test meets them.
 */
import { describe, expect, it } from "vitest";
import { startsWorkflows, workflowRunStarts } from "../../harness/fake-events.ts";
import { FakeGitHub } from "../../harness/fake-github.ts";

const DAY = 24 * 3_600_000;

const repo = "/repos/octo/demo";

/** A PR from a branch with one new file into main. */
function pullWith(gh: FakeGitHub, files: Record<string, string>): number {
  gh.branches.set("feature", gh.branches.get("main")!);
  gh.commit("feature", files);
  const [status, pr] = gh.handle("POST", `${repo}/pulls`, { head: "feature", base: "main", title: "t" });
  expect(status).toBe(201);
  return (pr as { number: number }).number;
}

describe("the fake GitHub's repository settings", () => {
  it("refuses a merge method the repository does not allow, and a merge commit where linear history is required", () => {
    const gh = new FakeGitHub();
    gh.settings.mergeMethods.merge = false;
    const n = pullWith(gh, { "a.txt": "a\n" });
    expect(gh.handle("PUT", `${repo}/pulls/${n}/merge`, { merge_method: "merge" })).toEqual([
      405,
      { message: "Merge commits are not allowed on this repository." },
      expect.anything(),
    ]);
    gh.settings.mergeMethods.merge = true;
    gh.settings.rules.push({ pattern: "~DEFAULT_BRANCH", source: "ruleset", linearHistory: true });
    expect(gh.handle("PUT", `${repo}/pulls/${n}/merge`, { merge_method: "merge" })[0]).toBe(405);
    expect(gh.handle("PUT", `${repo}/pulls/${n}/merge`, { merge_method: "squash" })[0]).toBe(200);
    const [head] = gh.store.log("main");
    expect(head!.parents).toHaveLength(1);
    // The rules API shows the ruleset's rule; branch protection is not in it.
    expect(gh.handle("GET", `${repo}/rules/branches/main`, undefined)[1]).toEqual([
      expect.objectContaining({ type: "required_linear_history" }),
    ]);
  });

  it("moves a branch by a ref update only by fast-forward, only where its rules allow a direct update; a PR whose head it reaches is merged", () => {
    const gh = new FakeGitHub();
    const n = pullWith(gh, { "a.txt": "a\n" });
    const head = gh.branches.get("feature")!;
    const update = (sha: string) => gh.handle("PATCH", `${repo}/git/refs/heads/main`, { sha, force: false });
    gh.settings.rules.push({ pattern: "main", source: "ruleset", pullRequest: true });
    expect(update(head)[1]).toEqual({
      message: "Repository rule violations found\n\nChanges must be made through a pull request.",
    });
    gh.settings.rules.splice(0, 1, { pattern: "main", source: "protection", requiredChecks: ["ci"] });
    expect(update(head)[1]).toEqual({
      message:
        'Protected branch update failed for refs/heads/main.\n\nRequired status check "ci" is expected.',
    });
    // A commit the required checks passed on may be pushed directly.
    gh.setCheck(head, "ci", "success");
    const side = gh.commit("main", { "b.txt": "b\n" }, "someone");
    expect(update(head)).toEqual([422, { message: "Update is not a fast forward" }, expect.anything()]);
    expect(gh.pulls.find((p) => p.number === n)!.merged).toBe(false);
    gh.branches.set("main", gh.store.log(head)[0]!.parents[0]!);
    expect(update(head)[0]).toBe(200);
    expect(gh.pulls.find((p) => p.number === n)).toMatchObject({ merged: true, state: "closed" });
    expect(side).not.toBe(gh.branches.get("main"));
  });

  it("refuses a PR whose head is behind its base where the required checks are strict", () => {
    const gh = new FakeGitHub();
    gh.settings.rules.push({ pattern: "main", source: "ruleset", requiredChecks: ["ci"], strict: true });
    const n = pullWith(gh, { "a.txt": "a\n" });
    gh.setCheck(gh.branches.get("feature")!, "ci", "success");
    gh.commit("main", { "b.txt": "b\n" }, "someone");
    const merge = () => gh.handle("PUT", `${repo}/pulls/${n}/merge`, { merge_method: "merge" });
    expect(merge()).toEqual([405, { message: 'Required status check "ci" is expected.' }, expect.anything()]);
    expect(gh.handle("GET", `${repo}/rules/branches/main`, undefined)[1]).toEqual([
      expect.objectContaining({
        type: "required_status_checks",
        parameters: expect.objectContaining({ strict_required_status_checks_policy: true }),
      }),
    ]);
    gh.settings.rules[0]!.strict = false;
    expect(merge()[0]).toBe(200);
  });

  it("merges only once the required checks passed on the head, from rulesets and branch protection alike", () => {
    const gh = new FakeGitHub();
    gh.settings.rules.push({ pattern: "main", source: "protection", requiredChecks: ["ci"] });
    const n = pullWith(gh, { "a.txt": "a\n" });
    const merge = () => gh.handle("PUT", `${repo}/pulls/${n}/merge`, { merge_method: "merge" });
    expect(merge()[1]).toEqual({ message: 'Required status check "ci" is expected.' });
    gh.setCheck(gh.branches.get("feature")!, "ci", "failure");
    expect(merge()[1]).toEqual({ message: 'Required status check "ci" is failing.' });
    gh.setCheck(gh.branches.get("feature")!, "ci", "success");
    expect(merge()[0]).toBe(200);
    expect(gh.handle("GET", `${repo}/branches/main`, undefined)[1]).toMatchObject({
      protected: true,
      protection: { required_status_checks: { contexts: ["ci"] } },
    });
  });

  it("takes a required check bound to an app only from that app, and says the binding in both APIs", () => {
    const gh = new FakeGitHub();
    gh.settings.rules.push({
      pattern: "main",
      source: "ruleset",
      requiredChecks: ["ci"],
      checkApps: { ci: 4242 },
    });
    const n = pullWith(gh, { "a.txt": "a\n" });
    const merge = () => gh.handle("PUT", `${repo}/pulls/${n}/merge`, { merge_method: "merge" });
    // GitHub Actions' check of that name satisfies nothing: the rule wants app 4242's.
    gh.setCheck(gh.branches.get("feature")!, "ci", "success");
    expect(merge()[1]).toEqual({ message: 'Required status check "ci" is expected.' });
    gh.setCheck(gh.branches.get("feature")!, "ci", "success", undefined, 4242);
    expect(merge()[0]).toBe(200);
    expect(gh.handle("GET", `${repo}/rules/branches/main`, undefined)[1]).toMatchObject([
      {
        type: "required_status_checks",
        parameters: { required_status_checks: [{ context: "ci", integration_id: 4242 }] },
      },
    ]);
    const checks = gh.handle("GET", `${repo}/commits/feature/check-runs`, undefined)[1] as {
      check_runs: { app: { id: number } }[];
    };
    expect(checks.check_runs.map((c) => c.app.id).sort((a, b) => a - b)).toEqual([4242, 15368]);
    gh.settings.rules.push({
      pattern: "main",
      source: "protection",
      requiredChecks: ["ci"],
      checkApps: { ci: 4242 },
    });
    expect(gh.handle("GET", `${repo}/branches/main`, undefined)[1]).toMatchObject({
      protection: { required_status_checks: { checks: [{ context: "ci", app_id: 4242 }] } },
    });
  });

  it("refuses a change to a workflow file without the workflows permission: a PR's merge, a branch merge, a ref update", () => {
    const gh = new FakeGitHub();
    const n = pullWith(gh, { ".github/workflows/ci.yml": "on: push\n" });
    const refused = [
      403,
      {
        message:
          "refusing to allow a GitHub App to create or update workflow `.github/workflows/ci.yml` without `workflows` permission",
      },
      expect.anything(),
    ];
    // The app's token (ghs_): an installation's, or a workflow's GITHUB_TOKEN.
    const asApp = (method: string, path: string, body: object) =>
      gh.handle(method, path, body, "", "token ghs_app");
    expect(asApp("PUT", `${repo}/pulls/${n}/merge`, { merge_method: "squash" })).toEqual(refused);
    gh.branches.set("other", gh.branches.get("main")!);
    expect(asApp("POST", `${repo}/merges`, { base: "other", head: "feature" })).toEqual(refused);
    expect(asApp("PATCH", `${repo}/git/refs/heads/other`, { sha: gh.branches.get("feature") })).toEqual(
      refused,
    );
    // A person's token with the `workflow` scope may.
    expect(gh.handle("PATCH", `${repo}/git/refs/heads/other`, { sha: gh.branches.get("feature") })[0]).toBe(
      200,
    );
    gh.settings.workflowsPermission = true;
    expect(asApp("PUT", `${repo}/pulls/${n}/merge`, { merge_method: "squash" })[0]).toBe(200);
  });

  it("refuses the PRs GITHUB_TOKEN opens where Actions may not open PRs, and counts 1,000 requests an hour for it", () => {
    const gh = new FakeGitHub();
    gh.settings.token = "github_token";
    gh.settings.actionsCanCreatePullRequests = false;
    gh.branches.set("feature", gh.branches.get("main")!);
    gh.commit("feature", { "a.txt": "a\n" });
    expect(gh.handle("POST", `${repo}/pulls`, { head: "feature", base: "main", title: "t" })).toEqual([
      403,
      { message: "GitHub Actions is not permitted to create or approve pull requests." },
      expect.anything(),
    ]);
    let last = gh.handle("GET", repo, undefined);
    expect(last[2]!["x-ratelimit-limit"]).toBe("1000");
    // The refused PR and this read were two of the hour's 1,000; the rest spread over 50 minutes,
    // below the points a minute allows.
    for (let i = 2; i < 1000; i++) {
      gh.clock.advance(3_000);
      last = gh.handle("GET", repo, undefined);
    }
    expect(last[0]).toBe(200);
    expect(gh.handle("GET", repo, undefined)[0]).toBe(403);
  });

  it("disables and enables a workflow through the API", () => {
    const gh = new FakeGitHub();
    gh.commit("main", {
      ".github/workflows/agentrelay-schedule.yml": "name: agentrelay schedule\non: push\n",
    });
    const state = () =>
      (
        gh.handle("GET", `${repo}/actions/workflows/agentrelay-schedule.yml`, undefined)[1] as {
          state: string;
        }
      ).state;
    expect(state()).toBe("active");
    expect(gh.handle("PUT", `${repo}/actions/workflows/agentrelay-schedule.yml/disable`, undefined)[0]).toBe(
      204,
    );
    expect(state()).toBe("disabled_manually");
    gh.handle("PUT", `${repo}/actions/workflows/agentrelay-schedule.yml/enable`, undefined);
    expect(state()).toBe("active");
    gh.expectNoViolations();
  });
});

describe("which workflows an event starts, and for whom", () => {
  it("starts none for GITHUB_TOKEN's events but dispatches, and holds its PRs' runs for approval by default", () => {
    expect(startsWorkflows("push", "github_token")).toBe("no");
    // GitHub's documented rule: opened, synchronize and reopened held for approval; other types none.
    for (const action of ["opened", "synchronize", "reopened"])
      expect(startsWorkflows("pull_request", "github_token", { action })).toBe("held");
    for (const action of ["closed", "labeled", "edited"])
      expect(startsWorkflows("pull_request", "github_token", { action })).toBe("no");
    expect(startsWorkflows("pull_request", "github_token")).toBe("held");
    expect(startsWorkflows("pull_request", "github_token", { approvalForActionsPullRequests: false })).toBe(
      "no",
    );
    expect(startsWorkflows("workflow_dispatch", "github_token")).toBe("yes");
    expect(startsWorkflows("pull_request", "app")).toBe("yes");
  });

  it("starts no check_suite or check_run workflow for GitHub Actions' own suites", () => {
    expect(startsWorkflows("check_suite", "person", { checkSuiteApp: "github-actions" })).toBe("no");
    expect(startsWorkflows("check_run", "app", { checkSuiteApp: "github-actions" })).toBe("no");
    expect(startsWorkflows("check_suite", "person", { checkSuiteApp: "circleci" })).toBe("yes");
  });

  it("starts workflow_run for the named workflows, on the branches filtered, up to three levels", () => {
    const on = { workflows: ["agentrelay task", "CI"], branches: ["main", "agentrelay/**"] };
    // The docs' example: after A (started by another event), B, C and D run; E and F do not.
    const chain = ["A", "B", "C", "D", "E", "F"].filter((_, depth) =>
      depth === 0
        ? true
        : workflowRunStarts({ workflows: ["*"] }, { workflow: "x", headBranch: "main", depth: depth - 1 }),
    );
    expect(chain).toEqual(["A", "B", "C", "D"]);
    expect(workflowRunStarts(on, { workflow: "CI", headBranch: "agentrelay/g/t", depth: 0 })).toBe(true);
    expect(workflowRunStarts(on, { workflow: "CI", headBranch: "feature/x", depth: 0 })).toBe(false);
    expect(workflowRunStarts(on, { workflow: "Lint", headBranch: "main", depth: 0 })).toBe(false);
    expect(workflowRunStarts(on, { workflow: "agentrelay task", headBranch: "main", depth: 1 })).toBe(true);
    expect(workflowRunStarts(on, { workflow: "agentrelay task", headBranch: "main", depth: 2 })).toBe(true);
    expect(workflowRunStarts(on, { workflow: "agentrelay task", headBranch: "main", depth: 3 })).toBe(false);
    expect(workflowRunStarts({ workflows: ["C*"] }, { workflow: "CI", headBranch: "x", depth: 0 })).toBe(
      true,
    );
  });

  it("starts no workflow_run for a run GITHUB_TOKEN dispatched (undocumented: the strict reading)", () => {
    const on = { workflows: ["agentrelay task"] };
    const run = { workflow: "agentrelay task", headBranch: "main", depth: 0 };
    expect(workflowRunStarts(on, { ...run, actor: "github_token" })).toBe(false);
    expect(workflowRunStarts(on, { ...run, actor: "app" })).toBe(true);
    expect(workflowRunStarts(on, { ...run, actor: "person" })).toBe(true);
  });
});

describe("what the fake answers to whom", () => {
  /** A GET through the fake's in-process fetch with a token of this shape. */
  const get = async (gh: FakeGitHub, path: string, token: string) => {
    const response = await gh.fetch(`https://api.github.com${gh.base}${path}`, {
      headers: { authorization: `token ${token}` },
    });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  };

  it("gives the merge buttons (allow_*_merge) to a person, not to GITHUB_TOKEN or an installation", async () => {
    const gh = new FakeGitHub();
    for (const kind of ["github_token", "app"] as const) {
      gh.settings.token = kind;
      const { body } = await get(gh, "", `ghs_${"a".repeat(36)}`);
      expect(body.default_branch).toBe("main");
      expect(Object.keys(body).filter((k) => k.startsWith("allow_"))).toEqual([]);
    }
    const { body } = await get(gh, "", `ghp_${"a".repeat(36)}`);
    expect(body).toMatchObject({
      allow_merge_commit: true,
      allow_squash_merge: true,
      allow_rebase_merge: true,
    });
  });

  it("answers the Actions settings only to an administrator's token (403 to GITHUB_TOKEN)", async () => {
    const gh = new FakeGitHub();
    gh.settings.token = "github_token";
    for (const path of ["/actions/permissions/workflow", "/actions/permissions"]) {
      expect(await get(gh, path, `ghs_${"a".repeat(36)}`)).toEqual({
        status: 403,
        body: { message: "Resource not accessible by integration" },
      });
      expect((await get(gh, path, `ghp_${"a".repeat(36)}`)).status).toBe(200);
    }
  });
});

describe("the 60-day disable of scheduled workflows", () => {
  const SCHEDULED =
    'name: s\non:\n  schedule:\n    - cron: "7 * * * *"\njobs:\n  r:\n    runs-on: ubuntu-latest\n    steps:\n      - run: "true"\n';
  const state = async (gh: FakeGitHub) =>
    (
      (await (await gh.fetch(`https://api.github.com${gh.base}/actions/workflows/s.yml`)).json()) as {
        state: string;
      }
    ).state;

  it("disables a public repository's schedule after 60 days without a commit, until it is enabled", async () => {
    const gh = new FakeGitHub();
    gh.commit("main", { ".github/workflows/s.yml": SCHEDULED });
    gh.clock.advance(59 * DAY);
    expect(await state(gh)).toBe("active");
    gh.clock.advance(2 * DAY);
    expect(await state(gh)).toBe("disabled_inactivity");
    // A commit now does not turn it back on; enabling it does.
    gh.commit("main", { "README.md": "hello\n" });
    expect(await state(gh)).toBe("disabled_inactivity");
    const enabled = await gh.fetch(`https://api.github.com${gh.base}/actions/workflows/s.yml/enable`, {
      method: "PUT",
    });
    expect(enabled.status).toBe(204);
    expect(await state(gh)).toBe("active");
  });

  it("leaves a private repository's schedule on", async () => {
    const gh = new FakeGitHub();
    gh.settings.visibility = "private";
    gh.commit("main", { ".github/workflows/s.yml": SCHEDULED });
    gh.clock.advance(90 * DAY);
    expect(await state(gh)).toBe("active");
  });
});
