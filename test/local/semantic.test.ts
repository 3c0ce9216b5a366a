/**
 * Workstreams that merge cleanly but break together, run locally with the real Claude Code CLI and
 * the scripted model (harness/semantic-scenarios.ts): a pair a repair fixes, and the pair no repair
 * can (every scenario with AGENTRELAY_SEMANTIC_SUITE=all, and in `npm run bench:semantic`). After
 * each run the target's history is tested tree by tree: no broken tree lands.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runScenarioLocally } from "../../harness/semantic-run.ts";
import { scenarioAgent, scenarioGraph, weakenedOnTarget } from "../../harness/semantic-scenarios.ts";
import { git } from "../../src/attempt/git.ts";
import { waitingFor } from "../../src/cli/run-report.ts";
import { parseGraph } from "../../src/graph/load.ts";
import { type ScriptedModelServer, startScriptedModel } from "../../src/scripted/model-server.ts";
import { expectLandedWhole, expectLeftToPerson, scenariosToRun } from "../support/semantic.ts";

let server: ScriptedModelServer;
beforeAll(async () => {
  server = await startScriptedModel(scenarioAgent());
});
afterAll(() => server.close());

const scenarios = scenariosToRun(["signature", "unrepairable", "deleted-test"]);

describe.concurrent("parallel workstreams that break together, locally", () => {
  it.each(scenarios.filter((s) => s.repair !== null && !s.weakens).map((s) => [s.kind, s] as const))(
    "%s: verified before it lands, repaired, and no broken tree reaches main",
    async (_kind, scenario) => {
      const { state, repo, broken } = await runScenarioLocally(scenario, server.url, { verify: true });
      expectLandedWhole(state, broken);
      const log = await git(repo, ["log", "--format=%s", "main"]);
      expect(log).toMatch(/^Repair agentrelay\/[^/]+\/[^/]+\/integration with main$/m);
      for (const w of scenario.workstreams) expect(log).toContain(`Integrate workstream ${w.id}`);
    },
  );

  it.each(scenarios.filter((s) => s.weakens).map((s) => [s.kind, s] as const))(
    "%s: is not pushed; the PR waits for a person with the diff, and every test is still on main",
    async (_kind, scenario) => {
      const { state, repo, broken } = await runScenarioLocally(scenario, server.url, { verify: true });
      expect(broken).toEqual([]);
      expect(await weakenedOnTarget(repo)).toEqual([]);
      const waiting = Object.values(state.workstreams).filter((w) => w.verification?.toPerson);
      expect(waiting).toHaveLength(1);
      expect(waiting[0]!.reason).toMatch(
        /^not verified: the repair changed what judges it \(.+\): a person decides/,
      );
      expect(waiting[0]!.verification!.failure).toContain("diff --git");
      expect(await git(repo, ["log", "--format=%s", "main"])).not.toMatch(/^Repair /m);
    },
  );

  it.each(scenarios.filter((s) => s.repair === null).map((s) => [s.kind, s] as const))(
    "%s: waits for a person, with the failing output and how to see it",
    async (_kind, scenario) => {
      const { state, broken } = await runScenarioLocally(scenario, server.url, { verify: true });
      const [id, ws] = expectLeftToPerson(state, broken);
      // The run's report says how to see it in this repository (no remote), and what to do.
      const graph = parseGraph("g.yaml", scenarioGraph(scenario, { verify: true }));
      const branch = `agentrelay/${scenario.name}/${id}/integration`;
      expect(waitingFor(state, graph)).toBe(
        `waiting for you: ${branch} is ${ws.reason}; to see it: git switch --detach ${branch} && git merge --no-edit main && node test.js; fix it there and merge it into main (git merge), then run again`,
      );
    },
  );
});
