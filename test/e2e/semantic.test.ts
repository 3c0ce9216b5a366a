/**
 * Workstreams that merge cleanly but break together, on the loopback GitHub stand-in (the real app,
 * the bundled Action, the real Claude Code CLI against the scripted model): a pair that a repair job
 * fixes. The bare repository's main is tested tree by tree afterwards: no broken tree lands. Every
 * scenario (triples, and the one no repair fixes, which waits for a person) runs on the stand-in in
 * `npm run bench:semantic`; what the status comment says of them is test/github/landing-lines.test.ts.
 */
import { describe, expect, it } from "vitest";
import { brokenOnTarget, SCENARIOS, scenarioAgent, scenarioGraph } from "../../harness/semantic-scenarios.ts";
import { startStandin } from "../../harness/standin.ts";
import type { RunState } from "../../src/engine/types.ts";

describe("parallel workstreams that break together, on GitHub", () => {
  it(
    "verifies each integration PR by a job before it merges, and repairs the broken one by a job",
    { timeout: 300_000 },
    async () => {
      const scenario = SCENARIOS.find((s) => s.name === "rename-call")!;
      const s = await startStandin({ script: scenarioAgent([scenario]) });
      try {
        const since = s.gh.branches.get("main")!;
        await s.push({
          ...scenario.files,
          ".workflow/rename-call.yaml": scenarioGraph(scenario, { verify: true }),
        });
        await s.idle(240_000);
        const state = s.gh.state("rename-call/1") as unknown as RunState;
        expect(await brokenOnTarget(s.bare, since)).toEqual([]);
        expect(state.outcome).toBe("succeeded");
        const jobs = (prefix: string) => s.gh.dispatches.filter((d) => d.inputs.task!.startsWith(prefix));
        expect(jobs("verify-integration@").length).toBeGreaterThanOrEqual(
          Object.keys(state.workstreams).length,
        );
        const repairs = jobs("repair-integration@");
        expect(repairs.length).toBeGreaterThan(0);
        expect(repairs.every((d) => s.gh.workflowRuns.get(d.runId)!.conclusion === "success")).toBe(true);
        // A check run per repair, and the repair's commit on main.
        expect(
          s.gh.checkRuns.filter((c) => c.name.startsWith("agentrelay / repair-integration@")),
        ).toMatchObject(repairs.map(() => ({ conclusion: "success" })));
        expect(s.git("log", "--format=%s", "main")).toMatch(
          /^Repair agentrelay\/rename-call\/[^/]+\/integration with origin\/main$/m,
        );
        for (const pr of s.gh.pulls.filter((p) => p.head.endsWith("/integration")))
          expect(pr.merged).toBe(true);
      } finally {
        await s.close();
      }
    },
  );
});
