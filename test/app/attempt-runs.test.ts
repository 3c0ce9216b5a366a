/**
 * Which workflow run is an attempt's (security case 3): a run bearing the attempt's run-name from a
 * fork's PR (`event: pull_request`), from another repository, or a dispatched run other than the one
 * the attempt is bound to, changes nothing, whether its `workflow_run` event arrives or the reconciler
 * finds it listed; the attempt's own run still fails it.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { finishJob, type Harness, issueComment, repository, startApp, startJob } from "../../harness/app.ts";
import { DIAMOND } from "../../harness/graphs.ts";

let h: Harness;
beforeEach(async () => {
  h = await startApp();
});
afterEach(() => h.close());

const TASK_WORKFLOW = ".github/workflows/agentrelay-task.yml";

/** A completed task workflow run, as GitHub delivers it, bearing attempt 1 of a's run-name. */
function ended(run: Partial<Record<string, unknown>> = {}) {
  return {
    id: 999_001,
    path: TASK_WORKFLOW,
    event: "workflow_dispatch",
    head_branch: "main",
    head_repository: { full_name: "octo/demo" },
    created_at: new Date(h.gh.clock.now()).toISOString(),
    display_title: "agentrelay diamond/1 a attempt 1",
    status: "completed",
    conclusion: "failure",
    html_url: "https://github.com/octo/demo/actions/runs/999001",
    ...run,
  };
}

const deliver = (run: object) =>
  h.deliver("workflow_run", {
    action: "completed",
    workflow_run: run,
    repository: repository(h.gh),
    sender: { login: "mallory", type: "User" },
  });

const taskA = () =>
  (
    h.gh.state("diamond/1") as unknown as {
      tasks: { a: { status: string; attempt: number; attempts: { outcome: string | null; job?: string }[] } };
    }
  ).tasks.a;

const FORGED: [string, Partial<Record<string, unknown>>][] = [
  ["a fork's pull_request run", { event: "pull_request", head_repository: { full_name: "mallory/demo" } }],
  ["a pull_request run of this repository", { event: "pull_request" }],
  ["a run from another repository", { head_repository: { full_name: "mallory/demo" } }],
  ["a run on another branch", { head_branch: "feature" }],
  ["another workflow file", { path: ".github/workflows/other.yml" }],
];

describe("a workflow run is an attempt's only when it cannot be another's", () => {
  it("runs bearing the attempt's run-name from elsewhere fail nothing, before or after it is bound", async () => {
    await h.pushGraph(".workflow/diamond.yaml", `max_task_attempts: 2\n${DIAMOND}`);
    const dispatch = h.gh.dispatches[0]!;
    const earlier = new Date(h.gh.clock.now() - 3_600_000).toISOString();
    // Unbound (the job has not taken its token yet): a run created before the dispatch is not it either.
    for (const [, forged] of [...FORGED, ["an earlier run", { created_at: earlier }] as const])
      expect(await deliver(ended(forged))).toBe(200);
    expect(taskA()).toMatchObject({ status: "running", attempt: 1 });
    // Bound: only its run id counts, even for a dispatched run of this repository.
    const started = await startJob(h, dispatch);
    expect(taskA().attempts[0]!.job).toBe(String(dispatch.runId));
    for (const [, forged] of [...FORGED, ["another dispatched run", { id: dispatch.runId + 500 }] as const])
      expect(await deliver(ended(forged))).toBe(200);
    expect(taskA()).toMatchObject({ status: "running", attempt: 1 });
    expect(h.gh.dispatches).toHaveLength(1);
    // The attempt's own job goes on and reports: its result and its spend are kept.
    const report = await finishJob(h, dispatch, started, { costMicros: 500_000 });
    expect(report.status).toBe(200);
    expect(taskA().status).toBe("merged");
    expect(taskA().attempts[0]).toMatchObject({ outcome: "succeeded", costMicros: 500_000 });
    const { budget } = h.gh.state("diamond/1") as unknown as { budget: { run: { spentMicros: number } } };
    expect(budget.run.spentMicros).toBe(500_000);
  });

  it("the reconciler takes only the attempt's own run from what it lists; so does the event", async () => {
    await h.pushGraph(".workflow/diamond.yaml", `max_task_attempts: 2\n${DIAMOND}`);
    // The attempt's own run has not appeared yet (GitHub is slow to list it); a fork's has, and ended.
    const own = h.gh.dispatches[0]!.runId;
    const ownRun = h.gh.workflowRuns.get(own)!;
    h.gh.workflowRuns.delete(own);
    const forged = ended({ event: "pull_request", head_repository: { full_name: "mallory/demo" } });
    h.gh.workflowRuns.set(forged.id, forged as never);
    h.gh.permissions.set("alice", "write");
    // `/agentrelay status` runs the reconciler for the run.
    expect(await issueComment(h, "/agentrelay status", "alice")).toBe(200);
    expect(taskA()).toMatchObject({ status: "running", attempt: 1 });
    // Once the attempt's own run is listed, ended, the reconciler takes it, and binds the attempt.
    h.gh.workflowRuns.set(own, { ...ownRun, status: "completed", conclusion: "failure" });
    expect(await issueComment(h, "/agentrelay status", "alice", { id: 78 })).toBe(200);
    expect(taskA().attempts[0]).toMatchObject({ outcome: "failed", job: String(own) });
    expect(h.gh.dispatches.map((d) => `${d.inputs.task}/${d.inputs.attempt}`)).toEqual(["a/1", "a/2"]);
    // Its workflow_run event, late, changes nothing; attempt 2's own run, ended, fails it (unbound).
    expect(await deliver(ended({ id: own, created_at: ownRun.created_at }))).toBe(200);
    expect(h.gh.dispatches).toHaveLength(2);
    const second = h.gh.workflowRuns.get(h.gh.dispatches[1]!.runId)!;
    const verdict = { id: second.id, display_title: second.display_title, created_at: second.created_at };
    expect(await deliver(ended(verdict))).toBe(200);
    expect(taskA()).toMatchObject({ status: "failed", attempt: 2 });
    expect(taskA().attempts[1]).toMatchObject({ outcome: "failed", job: String(second.id) });
  });
});
