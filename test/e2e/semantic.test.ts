/**
 * Workstreams that merge cleanly but break together, on the loopback GitHub stand-in (the real app,
 * the bundled Action, the real Claude Code CLI against the scripted model): a pair and a triple that a
 * repair job fixes, and a pair no repair fixes. The bare repository's main is tested tree by tree
 * afterwards: no broken tree lands. (All the scenarios run locally in test/local/semantic.test.ts.)
 */
import { describe, expect, it } from "vitest";
import { brokenOnTarget, SCENARIOS, scenarioAgent, scenarioGraph } from "../../harness/semantic-scenarios.ts";
import { type Standin, startStandin } from "../../harness/standin.ts";
import type { RunState } from "../../src/engine/types.ts";

/**
 * The scenario's files and graph pushed to a stand-in's main, the run to its end, and `check` on what
 * it left; the stand-in closes after (the scenarios run side by side, each with its own).
 */
async function run(
  name: string,
  check: (result: { state: RunState; broken: string[]; standin: Standin }) => void,
): Promise<void> {
  const scenario = SCENARIOS.find((s) => s.name === name)!;
  const standin = await startStandin({ script: scenarioAgent([scenario]) });
  try {
    const since = standin.gh.branches.get("main")!;
    const graph = scenarioGraph(scenario, { verify: true });
    await standin.push({ ...scenario.files, [`.workflow/${name}.yaml`]: graph });
    await standin.idle(300_000);
    const state = standin.gh.state(`${name}/1`) as unknown as RunState;
    check({ state, broken: await brokenOnTarget(standin.bare, since), standin });
  } finally {
    await standin.close();
  }
}

const jobs = (s: Standin, prefix: string) => s.gh.dispatches.filter((d) => d.inputs.task!.startsWith(prefix));

describe.concurrent("parallel workstreams that break together, on GitHub", { timeout: 400_000 }, () => {
  it.each(["rename-call", "config-keys"])(
    "%s: each integration PR is verified by a job before it merges, the broken one repaired by a job",
    async (name) =>
      run(name, ({ state, broken, standin: s }) => {
        expect(broken).toEqual([]);
        expect(state.outcome).toBe("succeeded");
        const workstreams = Object.keys(state.workstreams);
        expect(jobs(s, "verify-integration@").length).toBeGreaterThanOrEqual(workstreams.length);
        const repairs = jobs(s, "repair-integration@");
        expect(repairs.length).toBeGreaterThan(0);
        expect(repairs.every((d) => s.gh.workflowRuns.get(d.runId)!.conclusion === "success")).toBe(true);
        // A check run per verification and repair, and the repair's commit on main.
        expect(
          s.gh.checkRuns.filter((c) => c.name.startsWith("agentrelay / repair-integration@")),
        ).toMatchObject(repairs.map(() => ({ conclusion: "success" })));
        expect(s.git("log", "--format=%s", "main")).toMatch(
          /^Repair agentrelay\/[^/]+\/[^/]+\/integration with origin\/main$/m,
        );
        for (const pr of s.gh.pulls.filter((p) => p.head.endsWith("/integration")))
          expect(pr.merged).toBe(true);
      }),
  );

  it("what no repair fixes waits for a person: the status comment shows the failing output and how to reproduce it", async () =>
    run("unrepairable", ({ state, broken, standin: s }) => {
      expect(broken).toEqual([]);
      expect(state.outcome).toBeNull();
      const [id] = Object.entries(state.workstreams).find(([, w]) => w.verification?.toPerson)!;
      const pr = s.gh.pulls.find((p) => p.head === `agentrelay/unrepairable/${id}/integration`)!;
      expect(pr).toMatchObject({ state: "open", merged: false });
      const status = s.gh.comments.find((c) => c.body.includes("agentrelay:status"))!.body;
      expect(status).toContain(
        `its gates fail on the tree that would land (1 repair attempt(s) did not fix it); to see it: git fetch origin && git switch --detach origin/agentrelay/unrepairable/${id}/integration && git merge --no-edit origin/main && node test.js`,
      );
      expect(status).toContain("migration numbers must run 1..3 without gaps or twins: 1, 2, 2");
      expect(s.gh.checkRuns.find((c) => c.name === `agentrelay / repair-integration@${id}`)).toMatchObject({
        conclusion: "failure",
      });
    }));
});
