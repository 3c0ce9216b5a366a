/**
 * bench/workflow-mode: workflow-only mode (`init --no-app`) on the stand-in, in simulated time, with
 * GitHub's rules on (which events start a workflow and for whom, the repository's CI on task PRs, the
 * rate limits: GITHUB_TOKEN's 1,000 requests an hour, 80 writes a minute and 500 an hour): graphs of
 * 30 and 300 tasks in chains, scripted jobs of 10 simulated minutes, a runner picking each job up in
 * 15 s, CI of 3 minutes (required on agentrelay's branches with a registered app; with GITHUB_TOKEN,
 * GitHub runs none on the PRs it opens). The orchestrator is the real one (the same handlers as the
 * bundle), run in process on the fake's clock, through the concurrency groups of the installed
 * workflows. Each row runs to the run's end, however long GitHub's limits make it, then a simulated
 * idle day. Reported: the outcome, simulated hours, orchestrator runs per attempt, the time from a task
 * PR's last check to the next dispatch (median, p95), requests GitHub refused for its limits, the
 * orchestrator's runner-minutes per task (each job rounded up to a minute, as GitHub bills), and the
 * runner-minutes a month an idle repository costs.
 */
import { checkToDispatch, percentile } from "../harness/check-latency.ts";
import { graphOf } from "../harness/app.ts";
import { chainsGraph } from "../harness/graphs.ts";
import { e2eAgent } from "../harness/e2e-agent.ts";
import type { TokenKind } from "../harness/fake-repo-settings.ts";
import { startStandin } from "../harness/standin.ts";
import { perMergedTask, table } from "./table.ts";

type Case = { tasks: number; workstreams: number; token: TokenKind };

const CASES: Case[] = [
  { tasks: 30, workstreams: 5, token: "github_token" },
  { tasks: 30, workstreams: 5, token: "app" },
  { tasks: 300, workstreams: 20, token: "github_token" },
  { tasks: 300, workstreams: 20, token: "app" },
];
const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;
const TOKEN_WORDS: Record<TokenKind, string> = { github_token: "GITHUB_TOKEN", app: "registered app" };

const minutes = (ms: number) => Math.max(1, Math.ceil(ms / MINUTE));

export async function workflowModeBench(cases: Case[] = CASES): Promise<string> {
  const rows: string[][] = [];
  for (const { tasks, workstreams, token } of cases) {
    const standin = await startStandin({
      script: e2eAgent(),
      orchestrator: "workflow",
      jobs: "scripted",
      simulated: {},
      memory: true,
      token,
      ci: { workflow: "CI", check: "ci", durationMs: 3 * MINUTE },
    });
    try {
      const { gh } = standin;
      // Required on task PRs where it can run on them (an app's PRs); doctor names the other case.
      if (token === "app")
        gh.settings.rules.push({ pattern: "agentrelay/**", source: "ruleset", requiredChecks: ["ci"] });
      const wall = performance.now();
      const begun = gh.clock.now();
      await standin.push({ ".workflow/chains.yaml": chainsGraph(tasks, workstreams) });
      const outcome = (await standin.runToEnd("chains/1", 14 * DAY)) ?? "unfinished";
      const hours = (gh.clock.now() - begun) / (60 * MINUTE);
      const runs = standin.runs!.runs;
      const done = runs.filter((r) => r.state === "done");
      const orchestratorMinutes = done.reduce((sum, r) => sum + minutes(r.ms ?? 0), 0);
      // A day with no run active: the scheduled runs in it (the run's own last events, such as CI
      // finishing on its last integration PRs, are the run's).
      const before = standin.runs!.runs.length;
      await standin.timeline!.run(() => false, DAY);
      const idle = standin
        .runs!.runs.slice(before)
        .filter((r) => r.state === "done" && r.event === "schedule");
      const idleMinutes = idle.reduce((sum, r) => sum + minutes(r.ms ?? 0), 0) * 30;
      const latency = checkToDispatch(gh, graphOf(gh.runSource("chains/1")), standin.ci.checksSettled);
      const attempts = gh.dispatches.length;
      const refused = gh.calls.filter((c) => c.status === 403 || c.status === 429).length;
      rows.push([
        `${tasks} in ${workstreams}`,
        TOKEN_WORDS[token],
        outcome,
        String(attempts),
        `${hours.toFixed(1)} h`,
        (done.length / attempts).toFixed(2),
        percentile(latency, 0.5).toFixed(0),
        percentile(latency, 0.95).toFixed(0),
        String(refused),
        (orchestratorMinutes / tasks).toFixed(2),
        String(idleMinutes),
        perMergedTask(gh.state("chains/1")),
        `${((performance.now() - wall) / 1000).toFixed(0)} s`,
      ]);
    } finally {
      await standin.close();
    }
  }
  return table(
    [
      "tasks",
      "token",
      "outcome",
      "attempts",
      "simulated time",
      "runs/attempt",
      "check→dispatch median (s)",
      "check→dispatch p95 (s)",
      "403/429",
      "orchestrator runner-min/task",
      "idle runner-min/month",
      "cost per merged task",
      "wall time",
    ],
    rows,
  );
}
