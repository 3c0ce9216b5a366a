/**
 * Workstreams that merge cleanly but break together, run locally with the real Claude Code CLI and
 * the scripted model (harness/semantic-scenarios.ts): a pair a repair fixes, and one no repair can.
 * After each run the target's history is tested tree by tree: no broken tree lands.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runScenarioLocally } from "../../harness/semantic-run.ts";
import { SCENARIOS, scenarioAgent, scenarioGraph } from "../../harness/semantic-scenarios.ts";
import { git } from "../../src/attempt/git.ts";
import { waitingFor } from "../../src/cli/run-report.ts";
import { parseGraph } from "../../src/graph/load.ts";
import { type ScriptedModelServer, startScriptedModel } from "../../src/scripted/model-server.ts";

let server: ScriptedModelServer;
beforeAll(async () => {
  server = await startScriptedModel(scenarioAgent());
});
afterAll(() => server.close());

/**
 * One scenario a repair fixes and the one it cannot: the real Claude Code CLI makes each a few
 * seconds, so the whole suite runs in `npm run bench:semantic`, on both hosts, with verification on
 * and off.
 */
const repairable = SCENARIOS.filter((s) => s.name === "signature");

describe.concurrent("parallel workstreams that break together, locally", { timeout: 400_000 }, () => {
  it.each(repairable.map((s) => [s.kind, s] as const))(
    "%s: verified before it lands, repaired, and no broken tree reaches main",
    async (_kind, scenario) => {
      const { state, repo, broken } = await runScenarioLocally(scenario, server.url, { verify: true });
      expect(broken).toEqual([]);
      expect(state.outcome).toBe("succeeded");
      const landings = Object.values(state.workstreams).map((w) => w.verification);
      // Each workstream was verified before it merged; what met and broke was repaired once.
      expect(landings.every((v) => v?.passed)).toBe(true);
      const repairs = landings.flatMap((v) => v?.repairs ?? []);
      expect(repairs.length).toBeGreaterThan(0);
      expect(repairs.every((r) => r.outcome === "succeeded")).toBe(true);
      const log = await git(repo, ["log", "--format=%s", "main"]);
      expect(log).toMatch(/^Repair agentrelay\/[^/]+\/[^/]+\/integration with main$/m);
      for (const w of scenario.workstreams) expect(log).toContain(`Integrate workstream ${w.id}`);
    },
  );

  it("what no repair fixes waits for a person, with the failing output and how to reproduce it", async () => {
    const scenario = SCENARIOS.find((s) => s.repair === null)!;
    const { state, broken } = await runScenarioLocally(scenario, server.url, { verify: true });
    expect(broken).toEqual([]);
    expect(state.outcome).toBeNull();
    const [waiting] = Object.entries(state.workstreams).filter(([, w]) => w.verification?.toPerson);
    expect(waiting).toBeDefined();
    const [id, ws] = waiting!;
    expect(ws).toMatchObject({ status: "pr_open", autoMergeSkipped: true });
    expect(ws.reason).toBe(
      "not verified: its gates fail on the tree that would land (1 repair attempt did not fix it)",
    );
    expect(ws.verification!.failure).toContain(
      "FAIL migrations.test.js - migration numbers must run 1..3 without gaps or twins: 1, 2, 2",
    );
    // The run's report says how to see it in this repository (no remote), and what to do.
    const graph = parseGraph("g.yaml", scenarioGraph(scenario, { verify: true }));
    const branch = `agentrelay/unrepairable/${id}/integration`;
    expect(waitingFor(state, graph)).toBe(
      `waiting for you: ${branch} is ${ws.reason}; to see it: git switch --detach ${branch} && git merge --no-edit main && node test.js; fix it there and merge it into main (git merge), then run again`,
    );
  });
});
