/**
 * A target that requires a merge queue: GitHub refuses the integration PR's direct merge (405
 * "Changes must be made through the merge queue"), so the PR is enqueued, not left to a person; the
 * queue's `merge_group` checks decide, and the queue merges it.
 */
import nock from "nock";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { mergeGroups, settle } from "../../harness/fake-merge-queue.ts";
import { createEngine } from "../../src/engine/engine.ts";
import { graphOf } from "../support/graphs.ts";
import { INTEGRATION_BRANCH, integrationPrOnFake } from "../support/integration-pr.ts";

beforeEach(() => nock.disableNetConnect());
afterEach(() => {
  nock.cleanAll();
  nock.enableNetConnect();
});

const engine = createEngine(
  graphOf([{ id: "a", ws: "w" }], [{ id: "w", autoMerge: true, extra: "verify_integration: false" }]),
);

const setup = () =>
  integrationPrOnFake(engine, {
    prepare: (github) => github.settings.mergeQueue.add("main"),
    verified: false,
  });

describe("an integration PR into a branch that requires a merge queue", () => {
  it("is enqueued, not left to a person, and lands once its merge group's checks pass", async () => {
    const { github, merge, wait } = setup();
    expect(await merge()).toEqual([]);
    expect(wait()).toEqual({
      person: false,
      line: "#9 is in main's merge queue: its merge_group checks decide",
    });
    expect(mergeGroups(github).map((g) => g.pull.number)).toEqual([9]);
    // Asked again (the next tick): still queued, once.
    expect(await merge()).toEqual([]);
    expect(mergeGroups(github)).toHaveLength(1);
    const group = mergeGroups(github)[0]!.sha;
    settle(github);
    expect(github.pulls.find((p) => p.number === 9)).toMatchObject({ merged: true, state: "closed" });
    expect(github.branches.get("main")).toBe(group);
    expect(github.ciChecks).toContainEqual(
      expect.objectContaining({ sha: group, name: "merge_group", conclusion: "success" }),
    );
  });

  it("stays open when its merge group's checks fail, and is not enqueued again as it is: the workstream fails", async () => {
    const { github, merge } = setup();
    const before = github.branches.get("main");
    await merge();
    settle(github, () => false);
    expect(github.pulls.find((p) => p.number === 9)).toMatchObject({ merged: false, state: "open" });
    expect(github.branches.get("main")).toBe(before);
    // Enqueued again as it is, the queue would remove it again, forever (a run that never ends).
    expect(await merge()).toEqual([
      {
        type: "integration_merge_failed",
        workstream: "w",
        reason: "the merge queue removed #9: failed status checks",
        at: 0,
      },
    ]);
    expect(mergeGroups(github)).toEqual([]);
  });

  it("where verification is on, a group that failed its checks is repaired; a new commit joins the queue again", async () => {
    const verifying = createEngine(graphOf([{ id: "a", ws: "w" }], [{ id: "w", autoMerge: true }]));
    const { github, merge } = integrationPrOnFake(verifying, {
      prepare: (github) => github.settings.mergeQueue.add("main"),
      verified: false,
    });
    await merge();
    settle(github, () => false);
    const head = github.branches.get(INTEGRATION_BRANCH)!;
    expect(await merge()).toEqual([
      {
        type: "integration_checks_failed",
        workstream: "w",
        head,
        output: "the merge queue removed #9: failed status checks",
        at: 0,
      },
    ]);
    github.commit(INTEGRATION_BRANCH, { "a.txt": "repaired\n" }, "repair");
    expect(await merge()).toEqual([]);
    expect(mergeGroups(github).map((g) => g.pull.number)).toEqual([9]);
  });
});
