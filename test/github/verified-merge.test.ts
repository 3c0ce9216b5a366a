/**
 * The merge of a verified integration PR lands exactly the tree that was verified: it goes ahead only
 * while the target is the commit the branch was verified with and the PR's head is the verified one
 * (GitHub's `sha`); otherwise the branch is verified again. Required checks that failed on the head
 * are repaired, the repair told what they said.
 */
import nock from "nock";
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
  it("is said at once: the run records that what landed is not the tree verified", async () => {
    const { github, merge, octokit } = setup();
    const before = github.branches.get("main")!;
    // Someone pushes to main after agentrelay's last look at it, just before GitHub merges: GitHub's
    // merge pins the head (`sha`), not the base, so it merges.
    octokit.hook.before("request", (options) => {
      if (options.method === "PUT" && String(options.url).endsWith("/merge"))
        github.commit("main", { "b.txt": "a third party\n" }, "b");
    });
    const [fact] = await merge();
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
