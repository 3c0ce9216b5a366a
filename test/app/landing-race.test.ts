/**
 * Two app replicas acting on one run state version when a workstream's last task lands: one lands the
 * integration (its PR opened and merged, or the target fast-forwarded), the other still holds the
 * version from before (its memory of the run, or a read just before the first one's write). Whatever
 * the second one carries out from that version, the workstream lands once: no second integration PR,
 * no second merge, its integration branch left where it landed.
 */
import { Octokit } from "@octokit/rest";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type Harness, runJob, startApp } from "../../harness/app.ts";
import { DEFAULT_CONFIG } from "../../src/github/client.ts";
import { RunDriver } from "../../src/github/driver.ts";
import { StateCache } from "../../src/github/state-cache.ts";

const ONE_TASK = `name: solo
workstreams:
  - id: w
    auto_merge: true
tasks:
  - id: a
    workstream_id: w
    description: only
`;
const BRANCH = "agentrelay/solo/w/integration";

let h: Harness;
beforeEach(async () => {
  h = await startApp({ statusIntervalMs: 0 });
});
afterEach(() => h.close());

/** Another replica of the app: its own client and its own memory of the runs, the same GitHub. */
const replica = () =>
  new RunDriver({
    octokit: new Octokit({ auth: "t", request: { retries: 0 } }),
    owner: h.gh.owner,
    repo: h.gh.repo,
    defaultBranch: "main",
    config: { ...DEFAULT_CONFIG, stateCache: new StateCache() },
    now: h.gh.clock.now,
    log: () => undefined,
  });

/**
 * Task a reported: its PR waits for the integration branch's required check `ci`, which then passes
 * (the check_suite event's handler, or a reconciler, merges it next). The run as it stands then.
 */
async function taskPrWaitsForCi(): Promise<void> {
  h.gh.settings.rules.push({ pattern: BRANCH, source: "ruleset", requiredChecks: ["ci"] });
  h.gh.onPullOpened = (pull) => h.gh.setCheck(h.gh.branches.get(pull.head)!, "ci", null);
  await h.pushGraph(".workflow/solo.yaml", ONE_TASK);
  await runJob(h, h.gh.dispatches[0]!);
  expect(h.gh.state("solo/1").tasks.a!.status).toBe("pr_open");
  h.gh.setCheck(h.gh.branches.get("agentrelay/solo/a")!, "ci", "success");
}

/** What GitHub holds of the landing: the integration PRs (merged or not) and where both branches are. */
const landing = () => ({
  prs: h.gh.pulls.filter((p) => p.head === BRANCH).map((p) => ({ merged: p.merged, state: p.state })),
  main: h.gh.branches.get("main"),
  branch: h.gh.branches.get(BRANCH),
});

describe("two replicas on one run state version when a workstream's tasks are all merged", () => {
  it("land its integration once: the second one's memory of the run lands nothing again", async () => {
    await taskPrWaitsForCi();
    const [first, second] = [replica(), replica()];
    // The second replica read the run while task a's PR waited (it keeps it: its next handler starts
    // from it); the first one merges the task and lands the workstream.
    await second.load("solo/1");
    await first.drive("solo/1", [{ type: "tick", at: h.gh.clock.now() }], { pending: true });
    expect(h.gh.state("solo/1").outcome).toBe("succeeded");
    const landed = landing();
    expect(landed.prs).toEqual([{ merged: true, state: "closed" }]);
    // Its reconciler carries out what that version says is owed (the task's merge, the integration).
    await second.drive("solo/1", [{ type: "tick", at: h.gh.clock.now() }], { pending: true });
    expect(landing()).toEqual(landed);
    expect(h.gh.state("solo/1").outcome).toBe("succeeded");
  });

  it("land its integration once when the second one read the run fresh just before the first one's write", async () => {
    await taskPrWaitsForCi();
    const [first, second] = [replica(), replica()];
    const before = await second.load("solo/1", { fresh: true });
    await first.drive("solo/1", [{ type: "tick", at: h.gh.clock.now() }], { pending: true });
    const landed = landing();
    // A handler deciding on what it read, the version the first one's write replaced.
    await second.drive("solo/1", [], { pending: true, loaded: before! });
    expect(landing()).toEqual(landed);
    expect(h.gh.state("solo/1").outcome).toBe("succeeded");
  });
});
