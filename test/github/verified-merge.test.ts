/**
 * The merge of a verified integration PR lands exactly the tree that was verified: it goes ahead only
 * while the target is the commit the branch was verified with and the PR's head is the verified one
 * (GitHub's `sha`); otherwise the branch is verified again. Required checks that failed on the head
 * are what a repair is told.
 */
import { Octokit } from "@octokit/rest";
import nock from "nock";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { FakeGitHub } from "../../harness/fake-github.ts";
import { createEngine } from "../../src/engine/engine.ts";
import { DEFAULT_CONFIG, type RepoContext } from "../../src/github/client.ts";
import { GitHubEffects } from "../../src/github/effects.ts";
import { type HostedRun, newMeta } from "../../src/github/hosted-run.ts";
import { failedRequiredChecks } from "../../src/github/required-checks.ts";
import { graphOf } from "../support/graphs.ts";

beforeEach(() => nock.disableNetConnect());
afterEach(() => {
  nock.cleanAll();
  nock.enableNetConnect();
});

const engine = createEngine(graphOf([{ id: "a", ws: "w" }], [{ id: "w", autoMerge: true }]));
const BRANCH = "agentrelay/g/w/integration";

function setup() {
  const github = new FakeGitHub();
  github.mount();
  github.commit("main", { "README.md": "hi\n" });
  github.branches.set(BRANCH, github.branches.get("main")!);
  github.commit(BRANCH, { "a.txt": "a\n" }, "a");
  github.openPull(9, BRANCH, "main");
  const effects = new GitHubEffects({
    octokit: new Octokit({ auth: "t", request: { retries: 0 } }),
    owner: "octo",
    repo: "demo",
    defaultBranch: "main",
    config: DEFAULT_CONFIG,
    now: () => 0,
    log: () => undefined,
  });
  const run = {
    ...engine.start(0).state,
    source: { path: "g.yaml", commit: "c", branch: "main", text: "" },
    github: newMeta(),
  } as unknown as HostedRun;
  const verified = { base: github.branches.get("main")!, head: github.branches.get(BRANCH)! };
  const merge = () =>
    effects.repeatable(
      { type: "merge_integration_pr", key: "k", workstream: "w", pr: { number: 9, url: "u" }, verified },
      run,
      engine,
    );
  return { github, merge };
}

describe("merging a verified integration PR", () => {
  it("merges while the target and the head are the verified ones", async () => {
    const { github, merge } = setup();
    expect(await merge()).toEqual([{ type: "integration_pr_merged", workstream: "w", at: 0 }]);
    expect(github.pulls.find((p) => p.number === 9)!.merged).toBe(true);
  });

  it.each([
    ["main", "main moved since it was verified"],
    [BRANCH, "its branch moved since it was verified"],
  ])("verifies again when %s moved since", async (moved, reason) => {
    const { github, merge } = setup();
    github.commit(moved, { "b.txt": "someone else\n" }, "b");
    expect(await merge()).toEqual([{ type: "integration_unverified", workstream: "w", reason, at: 0 }]);
    expect(github.pulls.find((p) => p.number === 9)!.merged).toBe(false);
  });
});

describe("required checks", () => {
  /** A client that answers the three reads with these rules, protection and check runs. */
  const ctx = (answers: { rules: object[]; protection?: object; runs: object[] }) => {
    const octokit = {
      request: async () => ({ data: answers.rules }),
      rest: {
        repos: { getBranch: async () => ({ data: { protection: answers.protection } }) },
        checks: { listForRef: async () => ({ data: { check_runs: answers.runs } }) },
      },
    };
    return { octokit, owner: "o", repo: "r" } as unknown as RepoContext;
  };
  const run = (name: string, conclusion: string, summary = "") => ({
    name,
    status: "completed",
    conclusion,
    output: { title: `${name} ${conclusion}`, summary },
  });

  it("says what the required checks (rulesets' and branch protection's) that failed on a commit said", async () => {
    const failed = await failedRequiredChecks(
      ctx({
        rules: [
          {
            type: "required_status_checks",
            parameters: { required_status_checks: [{ context: "ci / test" }] },
          },
        ],
        protection: { required_status_checks: { contexts: ["lint"], checks: [] } },
        runs: [
          run("ci / test", "failure", "2 failed: total is not a function"),
          run("lint", "success"),
          run("docs", "failure"),
        ],
      }),
      "main",
      "abc",
    );
    expect(failed).toBe("ci / test: failure\nci / test failure\n2 failed: total is not a function");
  });

  it("finds nothing when none is required, or they pass or still run", async () => {
    expect(
      await failedRequiredChecks(ctx({ rules: [], runs: [run("ci", "failure")] }), "main", "abc"),
    ).toBeNull();
    const pending = { name: "ci", status: "in_progress", conclusion: null, output: {} };
    expect(
      await failedRequiredChecks(
        ctx({
          rules: [
            { type: "required_status_checks", parameters: { required_status_checks: [{ context: "ci" }] } },
          ],
          runs: [pending],
        }),
        "main",
        "abc",
      ),
    ).toBeNull();
  });
});
