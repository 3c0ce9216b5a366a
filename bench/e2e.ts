/**
 * bench/e2e: the diamond scenario end to end (the real app over HTTP, the bundled Action as a
 * child process per job, the real Claude Code CLI against the scripted model, a loopback GitHub on
 * a bare repository): wall time from the push to the finished run, GitHub calls per task, and what
 * each merged task cost (the scripted model's usage, priced as Anthropic prices it).
 */
import { DIAMOND } from "../harness/graphs.ts";
import { e2eAgent } from "../harness/e2e-agent.ts";
import { startStandin } from "../harness/standin.ts";
import { perMergedTask, table } from "./table.ts";

export async function e2eBench(): Promise<string> {
  const rows: string[][] = [];
  for (let i = 0; i < 3; i++) {
    const standin = await startStandin({ script: e2eAgent() });
    try {
      const started = performance.now();
      await standin.push({ ".workflow/diamond.yaml": DIAMOND });
      await standin.idle();
      const wall = performance.now() - started;
      const state = standin.gh.state("diamond/1");
      const outcome = state.outcome ?? "unfinished";
      const tokens = standin.jobRequests.filter((r) => r.path === "/agentrelay/token").length;
      // Calls from the jobs (each reads its state once) are counted apart from the app's.
      const jobCalls = standin.gh.calls.filter((c) => c.path.includes("/contents/run-")).length;
      const appCalls = standin.gh.calls.length - jobCalls;
      const tasks = standin.gh.dispatches.length;
      rows.push([
        String(i + 1),
        outcome,
        `${(wall / 1000).toFixed(1)} s`,
        String(tasks),
        String(tokens),
        (appCalls / tasks).toFixed(1),
        (jobCalls / tasks).toFixed(1),
        perMergedTask(state),
      ]);
    } finally {
      await standin.close();
    }
  }
  return table(
    [
      "run",
      "outcome",
      "wall time",
      "tasks",
      "token exchanges",
      "app calls/task",
      "job calls/task",
      "cost per merged task",
    ],
    rows,
  );
}
