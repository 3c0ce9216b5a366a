/**
 * bench/workflow-mode: workflow-only mode (`init --no-app`) on the stand-in, 300 tasks in 20
 * workstreams with scripted jobs (the orchestrator is the real bundled entry, a fresh process per
 * event, through the concurrency group the installed workflow names). Reported: orchestrator runs per
 * attempt (the target is at most 3), the runs GitHub cancelled, API calls per task, and runner-minutes
 * per task as GitHub bills them (each job rounded up to a whole minute; a scripted task job counts one
 * minute, a real one takes as long as its agent works).
 */
import { chainsGraph } from "../harness/graphs.ts";
import { e2eAgent } from "../harness/e2e-agent.ts";
import { startStandin } from "../harness/standin.ts";
import { table } from "./table.ts";

const CASES: [tasks: number, workstreams: number][] = [
  [30, 5],
  [300, 20],
];

export async function workflowModeBench(): Promise<string> {
  const rows: string[][] = [];
  for (const [tasks, workstreams] of CASES) {
    const standin = await startStandin({ script: e2eAgent(), orchestrator: "workflow", jobs: "scripted" });
    try {
      const started = performance.now();
      await standin.push({ ".workflow/chains.yaml": chainsGraph(tasks, workstreams) });
      await standin.idle(1_800_000);
      // The schedule would repair anything missed; it is counted like any run.
      for (let tick = 0; tick < 5 && standin.gh.state("chains/1").outcome === null; tick++) {
        standin.schedule();
        await standin.idle(1_800_000);
      }
      const wall = performance.now() - started;
      const runs = standin.runs!.runs;
      const done = runs.filter((r) => r.state === "done");
      const attempts = standin.gh.dispatches.length;
      const minutes = (ms: number) => Math.max(1, Math.ceil(ms / 60_000));
      const orchestratorMinutes = done.reduce((sum, r) => sum + minutes(r.ms ?? 0), 0);
      rows.push([
        `${tasks} in ${workstreams}`,
        standin.gh.state("chains/1").outcome ?? "unfinished",
        String(attempts),
        String(done.length),
        String(runs.filter((r) => r.state === "cancelled").length),
        (done.length / attempts).toFixed(2),
        `${(done.reduce((sum, r) => sum + (r.ms ?? 0), 0) / done.length / 1000).toFixed(1)} s`,
        (standin.gh.calls.length / tasks).toFixed(1),
        ((orchestratorMinutes + attempts) / tasks).toFixed(2),
        `${(wall / 1000).toFixed(0)} s`,
      ]);
    } finally {
      await standin.close();
    }
  }
  return table(
    [
      "tasks",
      "outcome",
      "attempts",
      "orchestrator runs",
      "cancelled",
      "runs/attempt",
      "run time",
      "API calls/task",
      "runner-min/task",
      "wall time",
    ],
    rows,
  );
}
