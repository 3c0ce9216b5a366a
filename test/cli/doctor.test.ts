/**
 * `agentrelay doctor` against the fake GitHub (answering api.github.com through nock): a repository set
 * up as init leaves it has nothing to report; each misconfiguration that would stall a run or skip work
 * is named in one line with its fix; a missing token or a bad --repo is one line too.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import nock from "nock";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { FakeGitHub } from "../../harness/fake-github.ts";
import type { BranchRule } from "../../harness/fake-repo-settings.ts";
import { main } from "../../src/cli/main.ts";
import { withRepositoryTriggers } from "../../src/cli/commands/orchestrator-triggers.ts";
import { REPO_ROOT } from "../support/fixtures.ts";

const template = (file: string) => readFileSync(join(REPO_ROOT, "templates/workflows", file), "utf8");
const CI = `name: CI
on:
  pull_request:
jobs:
  test:
    runs-on: ubuntu-latest
    steps:
      - run: npm test
`;

/** A repository as `init --no-app` leaves it, with a CI workflow that runs on every PR. */
function installed(gh: FakeGitHub, ci = CI): void {
  gh.commit("main", {
    ".github/workflows/ci.yml": ci,
    ".github/workflows/agentrelay.yml": withRepositoryTriggers(template("no-app/agentrelay.yml"), {
      defaultBranch: "main",
      ci: ["CI"],
    }),
    ".github/workflows/agentrelay-task.yml": template("no-app/agentrelay-task.yml"),
    ".github/workflows/agentrelay-schedule.yml": template("no-app/agentrelay-schedule.yml"),
  });
}

let gh: FakeGitHub;
const saved = { ...process.env };
/** Puts `variables` back as the environment, in place: later files of the worker share it. */
function restoreEnv(variables: NodeJS.ProcessEnv): void {
  for (const key of Object.keys(process.env)) if (!(key in variables)) delete process.env[key];
  Object.assign(process.env, variables);
}
beforeEach(() => {
  nock.disableNetConnect();
  gh = new FakeGitHub();
  gh.mount();
  process.env.GITHUB_TOKEN = "ghp_doctor";
  delete process.env.GITHUB_API_URL;
});
afterEach(() => {
  nock.cleanAll();
  nock.enableNetConnect();
  restoreEnv(saved);
  gh.expectNoViolations();
});

async function doctor(...args: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = "";
  let err = "";
  const code = await main(["doctor", "--repo", "octo/demo", ...args], {
    out: (t) => void (out += `${t}\n`),
    err: (t) => void (err += `${t}\n`),
  });
  return { code, out, err };
}

describe("agentrelay doctor", () => {
  it("finds nothing about a merge queue whose CI runs on merge_group", async () => {
    installed(gh, CI.replace("  pull_request:\n", "  pull_request:\n  merge_group:\n"));
    gh.settings.mergeQueue.add("main");
    const { out } = await doctor();
    expect(out).toContain("octo/demo: nothing found that would stall a run");
  });

  it("finds nothing in a repository set up as init leaves it, and says how merges will go", async () => {
    installed(gh);
    const { code, out } = await doctor();
    expect(out).toContain("octo/demo: merges into main use merge");
    expect(out).toContain("octo/demo: nothing found that would stall a run");
    expect(code).toBe(0);
  });

  const CASES: [string, (gh: FakeGitHub) => void, RegExp][] = [
    [
      "merge commits only, and a ruleset that requires linear history on main",
      (gh) => {
        Object.assign(gh.settings.mergeMethods, { squash: false, rebase: false });
        gh.settings.rules.push({ pattern: "~DEFAULT_BRANCH", source: "ruleset", linearHistory: true });
      },
      /nothing can merge into main: the repository allows only merge, which the rules of main refuse \(linear history\): allow squash merging/,
    ],
    [
      "linear history required on agentrelay's branches",
      (gh) => gh.settings.rules.push({ pattern: "agentrelay/**", source: "ruleset", linearHistory: true }),
      /a rule requires linear history on `agentrelay\/…\/integration`: .*exempt `agentrelay\/\*\*` from the rule/,
    ],
    [
      "a required check that no workflow reports on task PRs",
      (gh) =>
        gh.settings.rules.push({ pattern: "agentrelay/**", source: "ruleset", requiredChecks: ["lint"] }),
      /the required check lint on `agentrelay\/…\/integration` comes from no workflow that runs on PRs into it, so task PRs would wait for it forever/,
    ],
    [
      "a required check in the rules' second page (GitHub pages them, 30 by default)",
      (gh) => {
        for (let i = 0; i < 30; i++)
          gh.settings.rules.push({ pattern: "agentrelay/**", source: "ruleset", requiredChecks: ["test"] });
        gh.settings.rules.push({ pattern: "agentrelay/**", source: "ruleset", requiredChecks: ["lint"] });
      },
      /the required check lint on `agentrelay\/…\/integration` comes from no workflow that runs on PRs into it/,
    ],
    [
      "a CI workflow whose branch filter skips integration branches",
      (gh) =>
        gh.commit("main", {
          ".github/workflows/ci.yml": CI.replace(
            "  pull_request:\n",
            "  pull_request:\n    branches: [main]\n",
          ),
        }),
      /CI workflow `ci\.yml` runs on PRs into main but not into `agentrelay\/…\/integration`, so task PRs get no CI from it: add `agentrelay\/\*\*`/,
    ],
    [
      "GITHUB_TOKEN with a required check on task PRs",
      (gh) =>
        gh.settings.rules.push({ pattern: "agentrelay/**", source: "ruleset", requiredChecks: ["test"] }),
      /task PRs are opened and pushed to with GITHUB_TOKEN, whose pull_request runs GitHub holds until a person with write access presses "Approve workflows to run", so the required check test on `agentrelay\/…\/integration` needs that click for every push agentrelay makes .*: register an app/,
    ],
    [
      "GITHUB_TOKEN with a required check on the default branch (a ruleset)",
      (gh) =>
        gh.settings.rules.push({ pattern: "~DEFAULT_BRANCH", source: "ruleset", requiredChecks: ["test"] }),
      /^octo\/demo: integration PRs are opened and pushed to with GITHUB_TOKEN, whose pull_request runs GitHub holds until a person with write access presses "Approve workflows to run", so the required check test on main needs that click for every push agentrelay makes \(retries, bringing a PR up to date, verifications, repairs\): register an app \(docs\/github.md, Tokens\), whose PRs run CI by themselves$/m,
    ],
    [
      "GITHUB_TOKEN with a required check on the default branch (branch protection)",
      (gh) => gh.settings.rules.push({ pattern: "main", source: "protection", requiredChecks: ["test"] }),
      /integration PRs are opened and pushed to with GITHUB_TOKEN, .* the required check test on main needs that click for every push/,
    ],
    [
      "a task workflow from before the hand-over job",
      (gh) =>
        gh.commit("main", {
          ".github/workflows/agentrelay-task.yml": template("no-app/agentrelay-task.yml").replace(
            /\n {2}# The orchestrator learns that this run ended[\s\S]*$/,
            "\n",
          ),
        }),
      /`agentrelay-task\.yml` does not hand over to the orchestrator when a task job ends .*: run `agentrelay init --no-app --force` and push/,
    ],
    [
      "'Allow GitHub Actions to create and approve pull requests' off",
      (gh) => (gh.settings.actionsCanCreatePullRequests = false),
      /GitHub refuses the PRs the orchestrator opens with GITHUB_TOKEN: turn on Settings, Actions, General, "Allow GitHub Actions to create and approve pull requests"/,
    ],
    [
      "a merge queue required on main, and CI that does not run on merge_group",
      (gh) => gh.settings.mergeQueue.add("main"),
      /main requires a merge queue, and no CI workflow runs on `merge_group`, .*add `merge_group:` to the `on:` of your CI workflow/,
    ],
    [
      "a ruleset that requires PRs into main, with no strict check and no merge queue",
      (gh) => gh.settings.rules.push({ pattern: "~DEFAULT_BRANCH", source: "ruleset", pullRequest: true }),
      /^octo\/demo: the rules of main keep agentrelay from updating it itself, and nothing there refuses to merge a PR once main moved after its verification \(no strict required check, no merge queue\), so a push to main between the check and the merge lands a combination nobody verified \(agentrelay says so right after\): turn on "Require branches to be up to date before merging" for a required check of main, or require a merge queue \(docs\/runs.md, When the target moves\)$/m,
    ],
    [
      "the Actions PR setting off in an organisation, where its policy greys it out",
      (gh) => {
        gh.settings.organization = true;
        gh.settings.actionsCanCreatePullRequests = false;
      },
      /"Allow GitHub Actions to create and approve pull requests" \(or register an app\); if it is greyed out, the organisation's policy decides: an owner changes it in the organisation's Settings, Actions, General, Workflow permissions$/m,
    ],
    [
      "only the organisation's own actions allowed",
      (gh) => {
        gh.settings.organization = true;
        gh.settings.allowedActions = "local_only";
      },
      /only this repository's own actions may run here, so agentrelay's Action and the actions its workflows use \(actions\/upload-artifact, actions\/create-github-app-token\) may be refused: allow them in Settings, Actions, General; if it is greyed out, the organisation's policy decides/,
    ],
    [
      "Actions turned off",
      (gh) => (gh.settings.actionsEnabled = false),
      /GitHub Actions is turned off for this repository, so no task job runs: turn it on in Settings, Actions, General$/m,
    ],
    [
      "no Anthropic secret",
      (gh) => gh.settings.secrets.clear(),
      /no secret ANTHROPIC_API_KEY or CLAUDE_CODE_OAUTH_TOKEN: .*add one/,
    ],
    [
      "an app named without its key",
      (gh) => gh.settings.variables.set("AGENTRELAY_APP_CLIENT_ID", "Iv1.abc"),
      /the variable AGENTRELAY_APP_CLIENT_ID names an app, but there is no secret AGENTRELAY_APP_PRIVATE_KEY/,
    ],
    [
      "an orchestrator from before the schedule moved out, pinning a Node 20 upload-artifact",
      (gh) =>
        gh.commit("main", {
          ".github/workflows/agentrelay.yml": template("no-app/agentrelay.yml").replace(
            "  workflow_dispatch:",
            '  schedule:\n    - cron: "*/15 * * * *"\n  workflow_dispatch:',
          ),
          ".github/workflows/agentrelay-task.yml": template("no-app/agentrelay-task.yml").replaceAll(
            "b7c566a772e6b6bfb58ed0dc250532a479d7789f # v6.0.0",
            "ea165f8d65b6e75b540449e92b4886f43607fa02 # v4.6.2",
          ),
        }),
      /`agentrelay-task\.yml` pins actions\/upload-artifact at a version that runs on Node 20[\s\S]*`agentrelay\.yml` runs every 15 minutes even with no run active[\s\S]*`agentrelay\.yml` does not start when `ci\.yml` finishes on a task PR/,
    ],
    [
      "no agentrelay workflows at all",
      (gh) =>
        gh.commit("main", {
          ".github/workflows/agentrelay.yml": null,
          ".github/workflows/agentrelay-task.yml": null,
          ".github/workflows/agentrelay-schedule.yml": null,
        }),
      /agentrelay is not installed on main \(no \.github\/workflows\/agentrelay-task\.yml\): run `agentrelay init`/,
    ],
  ];

  it.each(CASES)("names %s in one line with its fix", async (_, misconfigure, line) => {
    installed(gh);
    misconfigure(gh);
    const { code, out } = await doctor();
    expect(out).toMatch(line);
    expect(out).not.toContain("nothing found");
    for (const l of out.trim().split("\n")) expect(l).toMatch(/^octo\/demo: /);
    expect(code).toBe(1);
  });

  it("says nothing of a moved target where main requires strict checks, or lets agentrelay update it", async () => {
    for (const rule of [
      { pattern: "main", source: "ruleset", pullRequest: true, requiredChecks: ["test"], strict: true },
      { pattern: "main", source: "ruleset", requiredChecks: ["test"], strict: true },
    ] satisfies BranchRule[]) {
      gh.settings.rules.push(rule);
      expect((await doctor()).out).not.toMatch(/nobody verified/);
      gh.settings.rules.pop();
    }
    expect((await doctor()).out).not.toMatch(/nobody verified/);
  });

  it("matches required checks as GitHub names them: a matrix job's values, a reusable workflow's caller / callee", async () => {
    const ci = `name: CI
on:
  pull_request:
jobs:
  test:
    strategy:
      matrix:
        python: ["3.11", "3.12"]
    runs-on: ubuntu-latest
    steps:
      - run: pytest
  lint:
    name: Lint \${{ matrix.tool }}
    strategy:
      matrix:
        tool: [ruff]
    runs-on: ubuntu-latest
    steps:
      - run: ruff .
  shared:
    uses: ./.github/workflows/build.yml
`;
    installed(gh, ci);
    // A registered app: its PRs run CI, so only the check names are in question.
    gh.settings.variables.set("AGENTRELAY_APP_CLIENT_ID", "Iv1.abc");
    gh.settings.secrets.add("AGENTRELAY_APP_PRIVATE_KEY");
    gh.settings.rules.push({
      pattern: "agentrelay/**",
      source: "ruleset",
      requiredChecks: ["test (3.12)", "Lint ruff", "shared / build"],
    });
    const ok = await doctor();
    expect(ok.out).toContain("octo/demo: nothing found that would stall a run");
    expect(ok.code).toBe(0);
    // The bare job id of a matrix job is no check GitHub makes.
    gh.settings.rules.push({ pattern: "agentrelay/**", source: "ruleset", requiredChecks: ["test"] });
    const bare = await doctor();
    expect(bare.out).toMatch(
      /the required check test on `agentrelay\/…\/integration` comes from no workflow/,
    );
  });

  it("matches a required check bound to an app to that app: GitHub Actions' is a workflow's, another app's no workflow satisfies", async () => {
    installed(gh);
    gh.settings.variables.set("AGENTRELAY_APP_CLIENT_ID", "Iv1.abc");
    gh.settings.secrets.add("AGENTRELAY_APP_PRIVATE_KEY");
    // Bound to GitHub Actions (its app id), and reported by the CI workflow's job: nothing to say.
    gh.settings.rules.push({
      pattern: "agentrelay/**",
      source: "ruleset",
      requiredChecks: ["test"],
      checkApps: { test: 15368 },
    });
    const actions = await doctor();
    expect(actions.out).toContain("nothing found that would stall a run");
    // The same name bound to another app (a CI service's): the workflow's check does not count.
    gh.settings.rules.push({
      pattern: "main",
      source: "protection",
      requiredChecks: ["test"],
      checkApps: { test: 4242 },
    });
    const other = await doctor();
    expect(other.code).toBe(1);
    expect(other.out).toContain(
      "the required check test on main is bound to the app with id 4242, not to GitHub Actions, so only that app's check satisfies it (not the one `ci.yml` reports): if that app does not report test on integration PRs, they wait for it forever",
    );
    expect(other.out).not.toMatch(/on `agentrelay\/…\/integration` is bound/);
  });

  it("says in one line what to do without a token, or with a --repo that is not OWNER/NAME", async () => {
    delete process.env.GITHUB_TOKEN;
    delete process.env.GH_TOKEN;
    process.env.PATH = "/nonexistent"; // no `gh` to ask
    const none = await doctor();
    expect(none.code).toBe(1);
    expect(none.err.trim()).toBe(
      "agentrelay: no GitHub token: set GITHUB_TOKEN (or GH_TOKEN), or log in with `gh auth login`",
    );
    restoreEnv({ ...saved, GITHUB_TOKEN: "ghp_doctor" });
    let err = "";
    const code = await main(["doctor", "--repo", "not a repo"], {
      out: () => {},
      err: (t) => void (err += t),
    });
    expect(code).toBe(2);
    expect(err).toContain("--repo expects OWNER/NAME, got 'not a repo'");
  });
});
