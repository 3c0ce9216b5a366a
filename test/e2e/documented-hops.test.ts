/**
 * The workflow-only loop under GitHub's documented rules only (harness/fake-events.ts): a run that
 * GITHUB_TOKEN dispatched starts no workflow_run, and every scheduled run is dropped, so nothing
 * moves but what GitHub documents. Each hop: a person's push starts the orchestrator; its dispatch
 * (GITHUB_TOKEN, documented) starts a task run; the task run's last job dispatches the orchestrator
 * (documented); that run merges the task PR and dispatches what became ready in the same run; the
 * integration PRs auto-merge. In simulated time (a runner's pick-up 15 s, a job 10 minutes).
 */
import { afterEach, describe, expect, it } from "vitest";
import { graphOf } from "../../harness/app.ts";
import { percentile } from "../../harness/check-latency.ts";
import { e2eAgent } from "../../harness/e2e-agent.ts";
import { chainsGraph } from "../../harness/graphs.ts";
import { type Standin, startStandin } from "../../harness/standin.ts";
import { taskBranch } from "../../src/graph/model.ts";

let standin: Standin | undefined;
afterEach(async () => {
  await standin?.close();
  standin = undefined;
});

const HOUR = 3_600_000;

/** Seconds from each dependency's PR merge to its dependent's first dispatch. */
function mergeToDispatch(s: Standin, runKey: string): number[] {
  const graph = graphOf(s.gh.runSource(runKey));
  const seconds: number[] = [];
  for (const task of graph.tasks) {
    if (task.dependencies.length === 0) continue;
    const first = s.gh.dispatches.find((d) => d.inputs.task === task.id && d.inputs.attempt === "1")!;
    const merges = task.dependencies.map(
      (dep) => s.gh.pulls.find((p) => p.head === taskBranch(graph.name, dep) && p.merged)!.mergedAt!,
    );
    seconds.push((first.at - Math.max(...merges)) / 1000);
  }
  return seconds;
}

describe("the workflow-only loop on documented rules only", () => {
  it("runs a graph to its end with every scheduled run dropped: merge to next dispatch within a minute", async () => {
    const s = await startStandin({
      script: e2eAgent(),
      orchestrator: "workflow",
      jobs: "scripted",
      simulated: {},
      memory: true,
      token: "github_token",
      schedule: { drop: () => true },
    });
    standin = s;
    await s.push({ ".workflow/chains.yaml": chainsGraph(6, 2) });
    expect(await s.runToEnd("chains/1", 6 * HOUR)).toBe("succeeded");

    // The schedule never ran: every step came from a documented event.
    expect(s.cron.started).toBe(0);
    expect(s.cron.dropped).toBeGreaterThan(0);
    const runs = s.runs!.runs;
    expect(runs.filter((r) => r.event === "schedule")).toEqual([]);
    // The task runs GITHUB_TOKEN dispatched started no workflow_run; each handed over by a dispatch.
    expect(runs.filter((r) => r.event === "workflow_run")).toEqual([]);
    expect(s.taskJobs.handOvers.map((h) => h.status)).toEqual(s.gh.dispatches.map(() => 204));
    expect(runs.filter((r) => r.event === "workflow_dispatch").length).toBe(s.gh.dispatches.length);

    const seconds = mergeToDispatch(s, "chains/1");
    expect(seconds).toHaveLength(4);
    expect(percentile(seconds, 0.5)).toBeLessThanOrEqual(60);
  });
});
