/**
 * Security case 3 on the loopback GitHub, with the app and in workflow-only mode: while a task's first
 * attempt runs, GitHub delivers `workflow_run` failures bearing its run-name from a fork's PR (a
 * `pull_request` run from another repository) and from another dispatched run. The attempt is neither
 * failed nor dispatched again, and when its own job reports, its result and its spend are kept.
 * Jobs are scripted in process (the case is about the orchestrator, not the Action).
 */
import { afterEach, describe, expect, it } from "vitest";
import { chainsGraph } from "../../harness/graphs.ts";
import { e2eAgent } from "../../harness/e2e-agent.ts";
import { type Standin, startStandin } from "../../harness/standin.ts";

let standin: Standin | undefined;
afterEach(async () => {
  await standin?.close();
  standin = undefined;
});

interface Stored {
  outcome: string | null;
  tasks: Record<string, { status: string; attempt: number; attempts: { costMicros: number | null }[] }>;
  budget?: { run: { spentMicros: number } };
}

describe.each(["app", "workflow"] as const)("forged task workflow runs, orchestrated by the %s", (mode) => {
  it("fail nothing while the real attempt runs, and its spend is kept", async () => {
    let release = () => {};
    const released = new Promise<void>((done) => (release = done));
    let held: (() => void) | null = null;
    const reached = new Promise<void>((done) => (held = done));
    standin = await startStandin({
      script: e2eAgent(),
      orchestrator: mode,
      jobs: "scripted",
      // The first task's first attempt waits (with the app: holding its token) until the forgeries are in.
      hold: async (inputs) => {
        if (inputs.task !== "t0") return;
        held!();
        await released;
      },
    });
    const s = standin;
    await s.push({ ".workflow/chains.yaml": chainsGraph(1, 1) });
    await reached;
    const dispatched = s.gh.dispatches[0]!;
    const own = s.gh.workflowRuns.get(dispatched.runId)!;
    const failure = (run: Record<string, unknown>) =>
      s.webhook("workflow_run", {
        action: "completed",
        workflow_run: {
          ...own,
          // The task workflow's name, which the orchestrator workflow's workflow_run trigger names.
          name: "agentrelay task",
          status: "completed",
          conclusion: "failure",
          created_at: new Date().toISOString(),
          html_url: `https://github.com/octo/demo/actions/runs/${String(run.id)}`,
          // Started by a person (mallory's fork, or a dispatch by hand): GitHub fires workflow_run for it,
          // where a run GITHUB_TOKEN dispatched starts none (the fake's reading, issue 41).
          triggering_actor: { login: "mallory" },
          ...run,
        },
      });
    // A fork's PR changed the task workflow to run on pull_request, bearing the attempt's run-name.
    await failure({ id: 770_001, event: "pull_request", head_repository: { full_name: "mallory/demo" } });
    // A run of the task workflow dispatched by hand with the attempt's inputs: not the one it is bound to.
    await failure({ id: 770_002 });
    await s.runs?.idle();
    const during = s.gh.state("chains/1") as unknown as Stored;
    expect(during.tasks.t0).toMatchObject({ status: "running", attempt: 1 });
    expect(s.gh.dispatches.map((d) => `${d.inputs.task}/${d.inputs.attempt}`)).toEqual(["t0/1"]);
    if (s.runs) {
      // The orchestrator workflow's `if` starts no job for the fork's run; the other was refused inside.
      const forged = s.runs.runs.filter((r) => r.event === "workflow_run");
      expect(forged.map((r) => r.state)).toEqual(["skipped", "done"]);
    }
    release();
    await s.idle();
    const after = s.gh.state("chains/1") as unknown as Stored;
    expect(after.outcome).toBe("succeeded");
    expect(s.gh.dispatches.map((d) => `${d.inputs.task}/${d.inputs.attempt}`)).toEqual(["t0/1"]);
    expect(after.tasks.t0!.attempts).toHaveLength(1);
    expect(after.tasks.t0!.attempts[0]!.costMicros).toBe(10_000);
    expect(after.budget!.run.spentMicros).toBe(10_000);
    const merges = s.git("log", "--merges", "--format=%s", "main").split("\n");
    expect(merges.filter((m) => m.startsWith("Merge task"))).toEqual(["Merge task t0"]);
  });
});
