/**
 * Scenarios of the built-in suite (bench/scenarios/) on the loopback GitHub stand-in (the real app,
 * the bundled Action, the scripted model, its tools run by the tests' stand-in for Claude Code: what
 * is shown is the app's and the Action's; the bench runs them with the real CLI): by default a pair
 * that breaks together landing into a main that requires a merge queue (verified by a job, repaired
 * by a job, enqueued, and merged by the queue once its merge_group check passes), and a workstream
 * whose target a third party moves between its verification and its landing (verified again,
 * repaired). Every scenario that runs on the stand-in runs with AGENTRELAY_SEMANTIC_SUITE=all and in
 * `npm run bench:semantic`. The bare repository's main is judged by the independent check.
 */
import { describe, expect, it } from "vitest";
import { runScenarioOnStandin } from "../../harness/scenario-standin.ts";
import { removeStandinFiles } from "../../harness/standin.ts";
import { git } from "../../src/attempt/git.ts";
import { expectHeld, scenariosToRun } from "../support/semantic.ts";

// merge-queue: a target that requires a queue; moved-target: a third party's push between the check
// and the landing, which GitHub's refusal of the fast-forward turns into a new verification.
const scenarios = scenariosToRun(["merge-queue", "moved-target"], "stand-in");

describe.concurrent("scenarios of the built-in suite, on GitHub", () => {
  it.each(scenarios.map((s) => [s.name, s.kind, s] as const))(
    "%s (%s): nothing broken or weakened lands, and the run shows what the scenario expects",
    async (_name, _kind, scenario) => {
      const outcome = await runScenarioOnStandin(scenario, { verify: true, agent: "stand-in" });
      try {
        expectHeld(outcome);
        if (scenario.expect?.outcome === "succeeded" && scenario.repair && scenario.expect.repairs !== 0) {
          // Each integration PR verified by a job before it merged, the broken one repaired by a job.
          expect(outcome.summary.verifications).toBeGreaterThanOrEqual(scenario.workstreams.length);
          expect(outcome.summary.repairsFixed).toBeGreaterThan(0);
          expect(await git(outcome.repo, ["log", "--format=%s", "main"])).toMatch(
            /^Repair agentrelay\/[^/]+\/[^/]+\/integration with origin\/main$/m,
          );
        }
      } finally {
        removeStandinFiles(outcome.repo);
      }
    },
  );
});
