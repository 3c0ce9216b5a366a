/**
 * The merge of a verified integration PR lands exactly the tree that was verified: it goes ahead only
 * while the target is the commit the branch was verified with and the PR's head is the verified one
 * (GitHub's `sha`); otherwise the branch is verified again. Required checks that failed on the head
 * are repaired, the repair told what they said.
 */
import nock from "nock";
import type { BranchRule } from "../../harness/fake-repo-settings.ts";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createEngine } from "../../src/engine/engine.ts";
import { workstreamState } from "../../src/github/workstream-chart.ts";
import { graphOf } from "../support/graphs.ts";
import { INTEGRATION_BRANCH, integrationPrOnFake } from "../support/integration-pr.ts";

beforeEach(() => nock.disableNetConnect());
afterEach(() => {
  nock.cleanAll();
  nock.enableNetConnect();
});

const verifying = createEngine(graphOf([{ id: "a", ws: "w" }], [{ id: "w", autoMerge: true }]));
const BRANCH = INTEGRATION_BRANCH;

const setup = (engine = verifying) => integrationPrOnFake(engine);

describe("merging a verified integration PR", () => {
  it("merges while the target and the head are the verified ones", async () => {
    const { github, merge } = setup();
    // The fact names the commit it landed as (what a task in another repository is told).
    expect(await merge()).toEqual([
      { type: "integration_pr_merged", workstream: "w", commit: github.branches.get("main"), at: 0 },
    ]);
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

describe("a third party's push to the target between the check and the merge", () => {
  /** Commits to main as a third party does, right before the request `matches` reaches GitHub. */
  const pushBefore = (
    octokit: ReturnType<typeof setup>["octokit"],
    github: ReturnType<typeof setup>["github"],
    matches: (method: string, url: string) => boolean,
  ) =>
    octokit.hook.before("request", (options) => {
      if (matches(options.method, String(options.url)))
        github.commit("main", { "b.txt": "a third party\n" }, "b");
    });

  it("lands by a fast-forward GitHub refuses once main moved: verified again, nothing lands", async () => {
    const { github, merge, octokit } = setup();
    pushBefore(octokit, github, (method, url) => method === "PATCH" && url.includes("/git/refs/"));
    expect(await merge()).toEqual([
      { type: "integration_unverified", workstream: "w", reason: "main moved since it was verified", at: 0 },
    ]);
    expect(github.pulls.find((p) => p.number === 9)!.merged).toBe(false);
    expect(github.store.log("main")[0]!.message).toBe("b");
    expect(github.log(/PUT .*\/merge$/)).toEqual([]);
  });

  it("where a rule refuses the direct update, merges the PR, and says at once when main moved (the last net)", async () => {
    const { github, merge, octokit } = setup();
    github.settings.rules.push({ pattern: "main", source: "ruleset", pullRequest: true });
    const before = github.branches.get("main")!;
    // GitHub's merge pins the head (`sha`), not the base, so it merges.
    pushBefore(octokit, github, (method, url) => method === "PUT" && url.endsWith("/merge"));
    const [fact] = await merge();
    expect(github.log(/PATCH .*\/git\/refs/)).toEqual([]); // the ruleset says so: not even tried
    expect(github.pulls.find((p) => p.number === 9)!.merged).toBe(true);
    expect(fact).toMatchObject({ type: "integration_pr_merged", workstream: "w" });
    const landed = github.branches.get("main")!;
    expect((fact as { unverified?: string }).unverified).toBe(
      `main moved between the check and the merge: ${landed.slice(0, 7)} holds a tree nobody verified (the gates passed with main at ${before.slice(0, 7)}); run the gates on main`,
    );
    const { state } = verifying.start(0);
    verifying.apply(state, fact!);
    expect(state.workstreams.w!.landedUnverified).toBe((fact as { unverified: string }).unverified);
    expect(state.timeline.at(-1)).toMatchObject({
      type: "verification_failed",
      workstream: "w",
      detail: expect.stringMatching(/^landed unverified: main moved between the check and the merge/),
    });
    // The status comment's row of the workstream says it, for as long as the run is shown.
    expect(workstreamState(verifying.plan, state, "w")).toMatch(
      /^merged, unverified: main moved between the check and the merge: .*; run the gates on main$/,
    );
  });

  it("where required checks are strict, GitHub refuses the merge: verified again, nothing lands", async () => {
    const { github, merge, octokit } = setup();
    github.settings.rules.push({ pattern: "main", source: "ruleset", requiredChecks: ["ci"], strict: true });
    github.setCheck(github.branches.get(BRANCH)!, "ci", "success");
    pushBefore(octokit, github, (method, url) => method === "PUT" && url.endsWith("/merge"));
    expect(await merge()).toEqual([
      { type: "integration_unverified", workstream: "w", reason: "main moved since it was verified", at: 0 },
    ]);
    expect(github.pulls.find((p) => p.number === 9)!.merged).toBe(false);
  });

  it('is not merged again after "Base branch was modified": verified again', async () => {
    const { github, merge, octokit } = setup();
    github.settings.rules.push({ pattern: "main", source: "ruleset", pullRequest: true });
    github.baseMoves = 1;
    pushBefore(octokit, github, (method, url) => method === "PUT" && url.endsWith("/merge"));
    expect(await merge()).toEqual([
      { type: "integration_unverified", workstream: "w", reason: "main moved since it was verified", at: 0 },
    ]);
    expect(github.log(/PUT .*\/merge$/)).toHaveLength(1);
    expect(github.pulls.find((p) => p.number === 9)!.merged).toBe(false);
  });
});

describe("landing a verified integration PR where the app may update the target", () => {
  it("lands a merge commit of the verified pair by fast-forward, and GitHub marks the PR merged", async () => {
    const { github, merge, verifiedNow } = setup();
    const { base, head } = verifiedNow();
    const [fact] = await merge();
    const [landed] = github.store.log("main");
    expect(landed).toMatchObject({ parents: [base, head], message: "Integrate workstream w" });
    expect(fact).toEqual({ type: "integration_pr_merged", workstream: "w", commit: landed!.sha, at: 0 });
    expect(github.store.files("main")).toEqual(github.store.files(head));
    expect(github.pulls.find((p) => p.number === 9)).toMatchObject({ merged: true, state: "closed" });
    expect(github.log(/PUT .*\/merge$/)).toEqual([]);
  });

  it("lands once when GitHub moved main but its answer was lost: the retry finds the landing", async () => {
    const { github, merge, octokit } = setup();
    let lost = false;
    octokit.hook.after("request", (_response, options) => {
      if (!lost && options.method === "PATCH" && String(options.url).includes("/git/refs/")) {
        lost = true;
        throw Object.assign(new Error("Server Error"), { status: 502 });
      }
    });
    await expect(merge()).rejects.toThrow("Server Error");
    const [landed] = github.store.log("main");
    const [fact] = await merge();
    expect(fact).toEqual({ type: "integration_pr_merged", workstream: "w", commit: landed!.sha, at: 0 });
    expect(github.store.log("main")[0]!.sha).toBe(landed!.sha);
    expect(github.log(/PUT .*\/merge$/)).toEqual([]);
  });

  it("lands once when another replica landed the same pair first: its landing is taken as this one's", async () => {
    const { github, merge, octokit, verifiedNow } = setup();
    const { base, head } = verifiedNow();
    let first = "";
    octokit.hook.before("request", async (options) => {
      if (first || options.method !== "PATCH" || !String(options.url).includes("/git/refs/")) return;
      first = "pending";
      const repo = { owner: "octo", repo: "demo" };
      const tree = (await octokit.rest.git.getCommit({ ...repo, commit_sha: head })).data.tree.sha;
      const made = await octokit.rest.git.createCommit({
        ...repo,
        message: "other",
        tree,
        parents: [base, head],
      });
      first = made.data.sha;
      await octokit.rest.git.updateRef({ ...repo, ref: "heads/main", sha: first, force: false });
    });
    expect(await merge()).toEqual([{ type: "integration_pr_merged", workstream: "w", commit: first, at: 0 }]);
    expect(github.store.log("main")[0]!.sha).toBe(first);
  });

  it.each([
    ["branch protection that requires checks", { source: "protection", requiredChecks: ["ci"] }],
    ["a ruleset that requires PRs, unreadable here", { source: "protection", pullRequest: true }],
  ] satisfies [string, Omit<BranchRule, "pattern">][])(
    "merges the PR instead where %s refuses the update",
    async (_what, rule) => {
      const { github, merge } = setup();
      github.settings.rules.push({ pattern: "main", ...rule });
      github.setCheck(github.branches.get(BRANCH)!, "ci", "success");
      const [fact] = await merge();
      expect(fact).toMatchObject({ type: "integration_pr_merged", workstream: "w" });
      expect(github.calls.filter((c) => c.method === "PATCH").map((c) => c.status)).toEqual([422]);
      expect(github.log(/PUT .*\/merge$/)).toHaveLength(1);
      expect(github.store.log("main")[0]!.message).toBe("Integrate workstream w");
    },
  );
});

describe("a verification that left the target's merge to GitHub (a workflow file changed on it)", () => {
  it("lands as verified when GitHub merged the verified head into the verified target", async () => {
    const { github, merge, verifiedNow } = setup();
    github.commit("main", { ".github/workflows/ci.yml": "on: [push, merge_group]\n" }, "ci");
    // The branch was not pushed with main merged in: the verification passed on that merge locally.
    const facts = await merge(verifiedNow());
    expect(facts).toEqual([
      { type: "integration_pr_merged", workstream: "w", commit: github.branches.get("main"), at: 0 },
    ]);
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
