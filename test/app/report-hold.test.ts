/**
 * A runner holds its report while the task's PR waits for required checks GitHub is running: waiting
 * for required CI costs no state write of its own (the report, the merge and the next dispatch land in
 * one write), and a runner that does not hold is written at once, as before.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { finishJob, type Harness, startApp, startJob } from "../../harness/app.ts";
import { DIAMOND } from "../../harness/graphs.ts";

let h: Harness;
beforeEach(async () => {
  h = await startApp();
  await h.pushGraph(".workflow/diamond.yaml", DIAMOND);
  h.gh.settings.rules.push({ pattern: "agentrelay/**", source: "ruleset", requiredChecks: ["ci"] });
  // The repository's CI starts on every PR the app opens (its token's events start workflows).
  h.gh.onPullOpened = (pull) => h.gh.setCheck(h.gh.branches.get(pull.head)!, "ci", null);
});
afterEach(() => h.close());

const stateWrites = () =>
  h.gh.calls.filter((c) => c.path === "/graphql" && /createCommitOnBranch/.test(JSON.stringify(c.body)))
    .length;
const refusedCreates = () =>
  h.gh.calls.filter((c) => c.method === "POST" && c.path.endsWith("/pulls") && c.status >= 400).length;

describe("a report held while required checks run", () => {
  it("writes nothing while ci runs, then the report, the merge and the next dispatch in one write", async () => {
    const dispatch = h.gh.dispatches[0]!;
    const started = await startJob(h, dispatch);
    const before = stateWrites();
    const first = await finishJob(h, dispatch, started, { hold: true });
    expect(first.body).toMatchObject({ ok: true, held: true, retry_after_ms: 30_000 });
    const pr = h.gh.pulls.find((p) => p.head === "agentrelay/diamond/a")!;
    expect(pr.merged).toBe(false);
    expect(h.gh.state("diamond/1").tasks.a!.status).toBe("running");
    // Asked again while ci still runs: still held, and the PR is found, not created again.
    const again = await finishJob(h, dispatch, started, { hold: true, again: true });
    expect(again.body.held).toBe(true);
    expect(refusedCreates()).toBe(0);
    expect(stateWrites()).toBe(before);

    h.gh.setCheck(h.gh.branches.get(pr.head)!, "ci", "success");
    const taken = await finishJob(h, dispatch, started, { hold: true, again: true });
    expect(taken.body).toMatchObject({ ok: true, status: "merged" });
    expect(taken.body.held).toBeUndefined();
    expect(pr.merged).toBe(true);
    expect(stateWrites()).toBe(before + 1);
    expect(h.gh.dispatches.map((d) => d.inputs.task).sort()).toEqual(["a", "b", "c"]);
    const a = h.gh.state("diamond/1").tasks.a as unknown as { attempts: { outcome: string }[] };
    expect(a.attempts[0]).toMatchObject({ outcome: "succeeded" });
  });

  it("writes a report at once from a runner that does not hold, as before", async () => {
    const dispatch = h.gh.dispatches[0]!;
    const started = await startJob(h, dispatch);
    const before = stateWrites();
    const answer = await finishJob(h, dispatch, started);
    expect(answer.body).toMatchObject({ ok: true, status: "pr_open" });
    expect(stateWrites()).toBe(before + 1);
  });

  it("holds only for the app a required check is bound to: a same-named check of another app does not count", async () => {
    // The rule takes ci only from app 4242; GitHub Actions' ci runs (onPullOpened) and counts for nothing.
    h.gh.settings.rules[0]!.checkApps = { ci: 4242 };
    const dispatch = h.gh.dispatches[0]!;
    const started = await startJob(h, dispatch);
    const answer = await finishJob(h, dispatch, started, { hold: true });
    expect(answer.body).toMatchObject({ ok: true, status: "pr_open" });
    expect(answer.body.held).toBeUndefined();
  });

  it("does not hold for a required check that is not running: it may never come", async () => {
    h.gh.onPullOpened = () => undefined;
    const dispatch = h.gh.dispatches[0]!;
    const started = await startJob(h, dispatch);
    const answer = await finishJob(h, dispatch, started, { hold: true });
    expect(answer.body).toMatchObject({ ok: true, status: "pr_open" });
    expect(answer.body.held).toBeUndefined();
    const status = h.gh.comments.find((c) => c.body.includes("agentrelay:status"))!.body;
    expect(status).toContain("waits for the required check ci");
  });
});
