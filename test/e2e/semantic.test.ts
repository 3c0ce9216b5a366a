/**
 * Workstreams that merge cleanly but break together, on the loopback GitHub stand-in (the real app,
 * the bundled Action, the real Claude Code CLI against the scripted model): a pair that a repair job
 * fixes (every scenario, and the one no repair fixes, with AGENTRELAY_SEMANTIC_SUITE=all and in `npm
 * run bench:semantic`; the status lines of that one are test/github/landing-lines.test.ts). The bare
 * repository's main is tested tree by tree afterwards: no broken tree lands.
 */
import { describe, expect, it } from "vitest";
import {
  brokenOnTarget,
  scenarioAgent,
  scenarioGraph,
  type SemanticScenario,
} from "../../harness/semantic-scenarios.ts";
import { type Standin, startStandin } from "../../harness/standin.ts";
import type { RunState } from "../../src/engine/types.ts";
import { expectLandedWhole, expectLeftToPerson, scenariosToRun } from "../support/semantic.ts";

const scenarios = scenariosToRun(["rename-call"]);

/** The scenario's files and graph pushed to a stand-in of its own, run to the end; `check` sees what is left. */
async function run(
  scenario: SemanticScenario,
  check: (s: Standin, state: RunState, broken: string[]) => void,
): Promise<void> {
  const s = await startStandin({ script: scenarioAgent([scenario]) });
  try {
    const since = s.gh.branches.get("main")!;
    const graph = scenarioGraph(scenario, { verify: true });
    await s.push({ ...scenario.files, [`.workflow/${scenario.name}.yaml`]: graph });
    await s.idle();
    const state = s.gh.state(`${scenario.name}/1`) as unknown as RunState;
    check(s, state, await brokenOnTarget(s.bare, since));
  } finally {
    await s.close();
  }
}

const jobs = (s: Standin, prefix: string) => s.gh.dispatches.filter((d) => d.inputs.task!.startsWith(prefix));

describe.concurrent("parallel workstreams that break together, on GitHub", () => {
  it.each(scenarios.filter((s) => s.repair !== null).map((s) => [s.kind, s] as const))(
    "%s: each integration PR is verified by a job before it merges, the broken one repaired by a job",
    (_kind, scenario) =>
      run(scenario, (s, state, broken) => {
        expectLandedWhole(state, broken);
        expect(jobs(s, "verify-integration@").length).toBeGreaterThanOrEqual(scenario.workstreams.length);
        const repairs = jobs(s, "repair-integration@");
        expect(repairs.every((d) => s.gh.workflowRuns.get(d.runId)!.conclusion === "success")).toBe(true);
        // A check run per repair, and the repair's commit on main.
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

  it.each(scenarios.filter((s) => s.repair === null).map((s) => [s.kind, s] as const))(
    "%s: waits for a person, the status comment saying what fails and how to see it",
    (_kind, scenario) =>
      run(scenario, (s, state, broken) => {
        const [id] = expectLeftToPerson(state, broken);
        const branch = `agentrelay/${scenario.name}/${id}/integration`;
        expect(s.gh.pulls.find((p) => p.head === branch)).toMatchObject({ state: "open", merged: false });
        const status = s.gh.comments.find((c) => c.body.includes("agentrelay:status"))!.body;
        expect(status).toContain(
          `to see it: \`git fetch origin && git switch --detach origin/${branch} && git merge --no-edit origin/main && node test.js\``,
        );
        expect(status).toContain("migration numbers must run 1..3 without gaps or twins: 1, 2, 2");
        expect(s.gh.checkRuns.find((c) => c.name === `agentrelay / repair-integration@${id}`)).toMatchObject({
          conclusion: "failure",
        });
      }),
  );
});
