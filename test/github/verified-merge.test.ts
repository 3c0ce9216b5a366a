/**
 * The merge of a verified integration PR lands exactly the tree that was verified: it goes ahead only
 * while the target is the commit the branch was verified with and the PR's head is the verified one
 * (GitHub's `sha`); otherwise the branch is verified again. Required checks that failed on the head
 * are repaired, the repair told what they said.
 */
import { Octokit } from "@octokit/rest";
import nock from "nock";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { FakeGitHub } from "../../harness/fake-github.ts";
import { createEngine } from "../../src/engine/engine.ts";
import { DEFAULT_CONFIG } from "../../src/github/client.ts";
import { GitHubEffects } from "../../src/github/effects.ts";
import { type HostedRun, newMeta } from "../../src/github/hosted-run.ts";
import { graphOf } from "../support/graphs.ts";

beforeEach(() => nock.disableNetConnect());
afterEach(() => {
  nock.cleanAll();
  nock.enableNetConnect();
});

const verifying = createEngine(graphOf([{ id: "a", ws: "w" }], [{ id: "w", autoMerge: true }]));
const BRANCH = "agentrelay/g/w/integration";

function setup(engine = verifying) {
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
  return { github, merge, effects };
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

describe("a target that moves between the check and the merge", () => {
  it("is seen right after the merge, by the tree it made, and said", async () => {
    const { github, merge, effects } = setup();
    // The push lands after the check read the target (the window GitHub's `sha` does not close).
    const check = (effects as unknown as { targetMoved: (t: string, b: string) => Promise<string | null> })
      .targetMoved;
    Object.assign(effects, {
      targetMoved: async (target: string, base: string) => {
        const answer = await check.call(effects, target, base);
        github.commit("main", { "b.txt": "a third party\n" }, "b");
        return answer;
      },
    });
    const [merged] = await merge();
    expect(merged).toMatchObject({ type: "integration_pr_merged", workstream: "w" });
    expect((merged as { unverified?: string }).unverified).toMatch(
      /^main moved between the check and the merge \(to [0-9a-f]{7}\): [0-9a-f]{7} on main is a combination no gate ran on; verify main now/,
    );
    const state = verifying.start(0).state;
    Object.assign(state.workstreams.w!, {
      status: "pr_open",
      integration: "open",
      pr: { number: 9, url: "u" },
    });
    verifying.apply(state, merged!);
    expect(state.timeline.at(-1)).toMatchObject({ type: "verification_failed", workstream: "w" });
    expect(state.timeline.at(-1)!.detail).toMatch(
      /^landed unverified: main moved between the check and the merge/,
    );
  });

  it("says nothing when the target held still", async () => {
    const { merge } = setup();
    expect(await merge()).toEqual([{ type: "integration_pr_merged", workstream: "w", at: 0 }]);
  });
});

describe("required checks that failed on the integration PR's head", () => {
  it("are repaired, told what the failed ones said (rulesets' and branch protection's, not the others)", async () => {
    const { github, merge } = setup();
    github.settings.rules.push(
      { pattern: "main", source: "ruleset", requiredChecks: ["ci / test"] },
      { pattern: "main", source: "protection", requiredChecks: ["lint"] },
    );
    const head = github.branches.get(BRANCH)!;
    github.setCheck(head, "ci / test", "failure", "2 failed: total is not a function");
    github.setCheck(head, "lint", "failure", "app.js:3 unused variable");
    github.setCheck(head, "docs", "failure", "not required");
    expect(await merge()).toEqual([
      {
        type: "integration_checks_failed",
        workstream: "w",
        head,
        output:
          "ci / test: failure\nci / test failure\n2 failed: total is not a function\n\nlint: failure\nlint failure\napp.js:3 unused variable",
        at: 0,
      },
    ]);
    expect(github.pulls.find((p) => p.number === 9)!.merged).toBe(false);
  });

  it("fail the workstream as before where verification is off", async () => {
    const off = createEngine(
      graphOf([{ id: "a", ws: "w" }], [{ id: "w", autoMerge: true, extra: "verify_integration: false" }]),
    );
    const { github, merge } = setup(off);
    github.settings.rules.push({ pattern: "main", source: "protection", requiredChecks: ["lint"] });
    github.setCheck(github.branches.get(BRANCH)!, "lint", "failure");
    expect(await merge()).toEqual([
      {
        type: "integration_merge_failed",
        workstream: "w",
        reason: "the required check lint failed on its PR",
        at: 0,
      },
    ]);
  });
});
