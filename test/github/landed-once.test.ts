/**
 * An integration lands once, however it landed: a handler deciding on a run state from before the
 * landing (another replica's write replaced it; a crash came between the landing and its write) takes
 * GitHub's truth, the workstream's PR merged with its branch where it was, as the outcome. It neither
 * brings the branch up to date and opens (and merges) a PR again, nor verifies again a PR that landed.
 */
import nock from "nock";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { settle } from "../../harness/fake-merge-queue.ts";
import type { FakeGitHub } from "../../harness/fake-github.ts";
import { createEngine } from "../../src/engine/engine.ts";
import { graphOf } from "../support/graphs.ts";
import { INTEGRATION_BRANCH, integrationPrOnFake } from "../support/integration-pr.ts";

beforeEach(() => nock.disableNetConnect());
afterEach(() => {
  nock.cleanAll();
  nock.enableNetConnect();
});

const verifying = createEngine(graphOf([{ id: "a", ws: "w" }], [{ id: "w", autoMerge: true }]));
const unverified = createEngine(
  graphOf([{ id: "a", ws: "w" }], [{ id: "w", autoMerge: false, extra: "verify_integration: false" }]),
);

/** What GitHub holds of the landing: the PRs (merged or not) and where both branches are. */
const landing = (github: FakeGitHub) => ({
  prs: github.pulls.map((p) => ({ number: p.number, merged: p.merged, state: p.state })),
  main: github.branches.get("main"),
  branch: github.branches.get(INTEGRATION_BRANCH),
});

const LANDED = {
  type: "integration_pr_merged",
  workstream: "w",
  pr: { number: 9, url: "https://github.com/octo/demo/pull/9" },
  at: 0,
};

describe("an integration PR asked to open again after its workstream landed", () => {
  it("by a fast-forward of the target (the direct landing): landed, nothing opened or merged again", async () => {
    const { github, merge, open } = integrationPrOnFake(verifying);
    const [fact] = await merge();
    expect(fact).toMatchObject({ type: "integration_pr_merged" });
    const landed = landing(github);
    expect(landed.prs).toEqual([{ number: 9, merged: true, state: "closed" }]);
    expect(await open()).toEqual([LANDED]);
    expect(landing(github)).toEqual(landed);
  });

  it("through the merge queue: landed, nothing enqueued or merged again", async () => {
    const { github, merge, open } = integrationPrOnFake(unverified, {
      prepare: (gh) => gh.settings.mergeQueue.add("main"),
      verified: false,
    });
    await merge();
    settle(github);
    const landed = landing(github);
    expect(await open()).toEqual([LANDED]);
    expect(landing(github)).toEqual(landed);
  });

  it("merged by a person (auto_merge off): landed", async () => {
    const { github, octokit, open } = integrationPrOnFake(unverified, { verified: false });
    await octokit.rest.pulls.merge({ owner: "octo", repo: "demo", pull_number: 9 });
    const landed = landing(github);
    expect(await open()).toEqual([LANDED]);
    expect(landing(github)).toEqual(landed);
  });

  it("is opened as before when the branch took commits after a PR of it merged (not this landing)", async () => {
    const { github, octokit, open } = integrationPrOnFake(unverified, { verified: false });
    await octokit.rest.pulls.merge({ owner: "octo", repo: "demo", pull_number: 9 });
    github.commit(INTEGRATION_BRANCH, { "b.txt": "b\n" }, "b");
    const [fact] = await open();
    expect(fact).toMatchObject({ type: "integration_pr_opened", workstream: "w" });
    expect(github.pulls.filter((p) => p.state === "open")).toHaveLength(1);
  });
});

describe("a verified merge asked again after it landed and its write was lost, the target moved on since", () => {
  it("is landed, not verified again (whose landing would add a second Integrate commit)", async () => {
    const { github, merge } = integrationPrOnFake(verifying);
    await merge(); // its answer lost: the run still says the PR is open and verified
    github.commit("main", { "b.txt": "a third party\n" }, "b");
    expect(await merge()).toEqual([LANDED]);
    expect(github.store.log("main").filter((c) => c.message === "Integrate workstream w")).toHaveLength(1);
  });
});
