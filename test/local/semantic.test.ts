/**
 * Scenarios of the built-in suite (bench/scenarios/, read by the scenario loader) run locally with
 * the scripted model, its tools run by the tests' stand-in for Claude Code (what is shown is the
 * runner's verification, not the agent's; the bench runs them with the real CLI): workstreams that
 * merge cleanly but break together, a repair that weakens the tests, one that cannot fix the break, a
 * flaky landing gate, a gate that times out, a third party's commit between a verification and its
 * merge. After each run the independent check (harness/scenario-check.ts) judges the target: no
 * broken tree, no weakened test, and what the scenario expects. Every scenario runs with AGENTRELAY_SEMANTIC_SUITE=all.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runScenarioLocally } from "../../harness/semantic-run.ts";
import { scenarioAgent, scenarioGraph } from "../../harness/scenario-graph.ts";
import { git } from "../../src/attempt/git.ts";
import { waitingFor } from "../../src/cli/run-report.ts";
import { parseGraph } from "../../src/graph/load.ts";
import { type ScriptedModelServer, startScriptedModel } from "../../src/scripted/model-server.ts";
import { expectHeld, scenariosToRun } from "../support/semantic.ts";

const scenarios = scenariosToRun(
  ["deleted-test", "unrepairable", "moved-target", "gate-timeout", "flaky-gate"],
  "local",
);

let server: ScriptedModelServer;
beforeAll(async () => {
  server = await startScriptedModel(scenarioAgent(scenarios));
});
afterAll(() => server.close());

describe.concurrent("scenarios of the built-in suite, locally", () => {
  it.each(scenarios.map((s) => [s.name, s.kind, s] as const))(
    "%s (%s): nothing broken or weakened lands, and the run shows what the scenario expects",
    async (_name, _kind, scenario) => {
      const outcome = await runScenarioLocally(scenario, server.url, { verify: true, agent: "stand-in" });
      expectHeld(outcome);
      const log = await git(outcome.repo, ["log", "--format=%s", "main"]);
      if (scenario.expect?.outcome === "succeeded" && scenario.repair && scenario.expect.repairs !== 0) {
        // Repaired before it landed, and every workstream landed.
        expect(log).toMatch(/^Repair agentrelay\/[^/]+\/[^/]+\/integration with main$/m);
        for (const w of scenario.workstreams) expect(log).toContain(`Integrate workstream ${w.id}`);
      }
      const waiting = Object.entries(outcome.state.workstreams).filter(([, w]) => w.verification?.toPerson);
      if (/judges it/.test(scenario.expect?.reason ?? "")) {
        // A repair that weakened the tests: not pushed, and the person is shown its diff.
        expect(waiting[0]![1].verification!.failure).toContain("diff --git");
        expect(log).not.toMatch(/^Repair /m);
      }
      if (scenario.name === "unrepairable") {
        // The run's report says how to see it in this repository (no remote), and what to do.
        const [id, ws] = waiting[0]!;
        const graph = parseGraph("g.yaml", scenarioGraph(scenario, { verify: true }));
        const branch = `agentrelay/${scenario.name}/${id}/integration`;
        expect(waitingFor(outcome.state, graph)).toBe(
          `waiting for you: ${branch} is ${ws.reason}; to see it: git switch --detach ${branch} && git merge --no-edit main && node test.js; fix it there and merge it into main (git merge), then run again`,
        );
        expect(ws.verification!.failure).toContain(
          "FAIL migrations.test.js - migration numbers must run 1..3 without gaps or twins: 1, 2, 2",
        );
      }
    },
  );
});
