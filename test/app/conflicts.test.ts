/**
 * A resolution job through the app's endpoints: dispatched for a conflicting integration merge (GitHub's
 * 405 with mergeable_state dirty), bound to its own workflow run, given its token once with its
 * resolver's tier, and reporting through the same route as a task attempt.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type Harness, issueComment, keyOf, runJob, startApp } from "../../harness/app.ts";
import { OVERLAP } from "../../harness/graphs.ts";
import type { RunState } from "../../src/engine/types.ts";

const RIGHT = "agentrelay/overlap/right/integration";

let h: Harness;
beforeEach(async () => {
  h = await startApp();
});
afterEach(() => h.close());

/**
 * The overlapping graph's two jobs done, after someone else's b.txt reached main first: right's
 * integration PR conflicts with it, and its resolution job is dispatched.
 */
async function conflictingRun() {
  await h.pushGraph(".workflow/overlap.yaml", OVERLAP);
  const [a, b] = h.gh.dispatches;
  h.gh.commit("main", { "b.txt": "someone else's b\n" }, "b elsewhere");
  await runJob(h, a!);
  await runJob(h, b!);
  const resolution = h.gh.dispatches.find((d) => d.inputs.task === "resolve-integration@right")!;
  return { a: a!, resolution };
}

describe("a resolution job through the app", () => {
  it("is dispatched once for a conflict, takes its token once from its own job, and its report merges the PR", async () => {
    const { a, resolution } = await conflictingRun();
    expect(resolution.inputs).toMatchObject({ run: "overlap/1", attempt: "1" });
    expect(h.gh.dispatches).toHaveLength(3);
    const ask = async (runId: number) =>
      h.call(
        "/agentrelay/token",
        { run: "overlap/1", task: "resolve-integration@right", attempt: 1 },
        await h.oidc({ run_id: String(runId) }),
      );
    const before = JSON.stringify(h.gh.state("overlap/1"));
    const stolen = await ask(a.runId);
    expect(stolen).toMatchObject({
      status: 403,
      body: {
        error: `this job's run ${a.runId} was not dispatched for attempt 1 of resolve-integration@right (it bears another run-name)`,
      },
    });
    expect(JSON.stringify(h.gh.state("overlap/1"))).toBe(before);
    const own = await ask(resolution.runId);
    expect(own).toMatchObject({ status: 200, body: { tier: "standard" } });
    expect((await ask(resolution.runId)).body.error).toBe(
      "attempt 1 of resolve-integration@right already has its token",
    );
    const unknown = await h.call(
      "/agentrelay/token",
      { run: "overlap/1", task: "resolve-pr@nope", attempt: 1 },
      await h.oidc({ run_id: String(resolution.runId) }),
    );
    expect(unknown.status).toBe(404);

    // The job merges main into the branch (here: the same b.txt, which merges cleanly) and reports.
    h.gh.commit(RIGHT, { "b.txt": "someone else's b\n" }, "Merge main into the integration branch");
    const result = {
      outcome: "succeeded",
      noPr: false,
      reason: null,
      concerns: [],
      opsConcerns: [],
      summary: "Resolved conflicts in b.txt.",
      outputs: [],
      costMicros: 100_000,
      turns: 2,
      gates: [],
      conflicted: ["b.txt"],
      commit: null,
    };
    const report = (runId: number) =>
      h
        .oidc({ run_id: String(runId) })
        .then((oidc) =>
          h.call(
            "/agentrelay/report",
            { run: "overlap/1", task: "resolve-integration@right", attempt: 1, result },
            oidc,
            keyOf(own.body),
          ),
        );
    expect((await report(a.runId)).status).toBe(403);
    expect(await report(resolution.runId)).toMatchObject({ status: 200, body: { status: "succeeded" } });
    const state = h.gh.state("overlap/1") as unknown as RunState;
    expect(state.workstreams.right).toMatchObject({
      status: "merged",
      conflict: {
        files: ["b.txt"],
        resolutions: [{ n: 1, outcome: "succeeded", costMicros: 100_000, turns: 2 }],
      },
    });
    expect(h.gh.checkRuns.filter((c) => c.name === "agentrelay / resolve-integration@right")).toMatchObject([
      { conclusion: "success" },
    ]);
    expect(h.gh.dispatches).toHaveLength(3);
  });

  it("the reconciler fails a resolution whose job ended without reporting, and the next one starts", async () => {
    const { resolution: first } = await conflictingRun();
    Object.assign(h.gh.workflowRuns.get(first.runId)!, { status: "completed", conclusion: "failure" });
    h.gh.permissions.set("alice", "write");
    await issueComment(h, "/agentrelay status", "alice", { id: 1 });
    const state = h.gh.state("overlap/1") as unknown as RunState;
    expect(state.workstreams.right!.conflict!.resolutions).toMatchObject([
      { outcome: "failed", reason: "the job ended: failure" },
      { outcome: null },
    ]);
    expect(h.gh.dispatches.filter((d) => d.inputs.task === "resolve-integration@right")).toHaveLength(2);
    expect(h.gh.checkRuns.filter((c) => c.name === "agentrelay / resolve-integration@right")).toMatchObject([
      { conclusion: "failure" },
    ]);
  });

  it("/agentrelay cancel stops a resolution's job too", async () => {
    const { resolution } = await conflictingRun();
    h.gh.permissions.set("alice", "write");
    await issueComment(h, "/agentrelay cancel", "alice");
    expect(h.gh.log(/\/cancel$/)).toEqual([`POST /repos/octo/demo/actions/runs/${resolution.runId}/cancel`]);
    expect(h.gh.workflowRuns.get(resolution.runId)!.conclusion).toBe("cancelled");
  });
});
