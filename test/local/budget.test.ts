/**
 * A local run with a budget, through the real binary and the real Claude Code CLI against the scripted
 * model (whose turns cost what its token counts cost): the run stops dispatching when the budget is
 * spent, says so, and `agentrelay budget` raises it and finishes the run. That run is a real one
 * because each attempt's cap is Claude Code's own `--max-budget-usd`; the run whose reader goes away
 * shows the CLI's, and its attempts run the tests' stand-in for Claude Code.
 */
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { GitRefStateStore } from "../../src/local/git-store.ts";
import { withStandIn } from "../support/cli.ts";
import { REPO_ROOT } from "../support/fixtures.ts";
import { tempRepo } from "../support/git.ts";
import { graphYaml } from "../support/graphs.ts";

const BIN = join(REPO_ROOT, "bin/agentrelay.js");

function agentrelay(...args: string[]) {
  return agentrelayIn(process.env, ...args);
}

function agentrelayIn(env: NodeJS.ProcessEnv, ...args: string[]) {
  const result = spawnSync(process.execPath, [BIN, ...args], { encoding: "utf8", env });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** A repository and a three-task graph whose budget its first task's attempts spend. */
async function budgeted(): Promise<{ repo: string; graph: string }> {
  const repo = await tempRepo();
  const graph = join(mkdtempSync(join(tmpdir(), "agentrelay-graph-")), "g.yaml");
  writeFileSync(
    graph,
    graphYaml(
      [
        { id: "one", ws: "w" },
        { id: "two", deps: ["one"], ws: "w" },
        { id: "three", deps: ["two"], ws: "w" },
      ],
      [{ id: "w", autoMerge: true }],
      // The scripted model's turns cost a fraction of a cent: the floor is lowered to match.
      "max_cost_usd: 0.005\nmin_attempt_cost_usd: 0.001",
    ),
  );
  return { repo, graph };
}

describe("a local run with a budget", () => {
  it("stops when the budget is spent, says so, and goes on when it is raised", async () => {
    const { repo, graph } = await budgeted();
    const first = agentrelay("run", graph, "--repo", repo, "--scripted-model");
    expect(first.stderr).toBe("");
    // Not finished: it waits for a budget (exit code 3).
    expect(first.code).toBe(3);
    expect(first.stdout).toMatch(
      /Run g\/1: waiting for budget: budget (nearly )?spent: \$0\.00\d+ of \$0\.005 for the run[^;]*; raise it with `agentrelay budget FILE \+USD/,
    );
    const store = new GitRefStateStore(repo);
    const stopped = (await store.load("g/1"))!.state;
    const spent = Object.values(stopped.tasks).flatMap((t) => t.attempts.map((a) => a.costMicros ?? 0));
    // Each attempt ran with a cap (--max-budget-usd), and the run spent no more than its budget
    // and the last attempt's overshoot of one model turn.
    expect(Object.values(stopped.tasks).flatMap((t) => t.attempts.map((a) => a.capMicros))).not.toContain(
      null,
    );
    expect(spent.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(5_000 + 1_000);
    expect(stopped.tasks.three!.status).not.toBe("merged");

    const raised = agentrelay("budget", graph, "+0.05", "--repo", repo, "--scripted-model");
    expect(raised.stderr).toBe("");
    expect(raised.stdout).toMatch(/Run g\/1: succeeded/);
    expect(raised.code).toBe(0);
    const done = (await new GitRefStateStore(repo).load("g/1"))!.state;
    expect(done.budget!.raises).toHaveLength(1);
    expect(done.timeline.filter((e) => e.type === "budget_raised")).toHaveLength(1);
    expect(done.budget!.run.spentMicros).toBeGreaterThan(5_000);
    expect(raised.stdout).toMatch(/Spent \$0\.\d+ of \$0\.055/);
  });

  it("raised from a script that stops reading, goes on to the end of its run (security case 81)", async () => {
    const { repo, graph } = await budgeted();
    expect(agentrelayIn(withStandIn(), "run", graph, "--repo", repo, "--scripted-model").code).toBe(3);
    // No runner is live: `budget` resumes the run here. Its reader went away at once (`| true`).
    const child = spawn(
      process.execPath,
      [BIN, "budget", graph, "+0.05", "--repo", repo, "--scripted-model"],
      {
        env: withStandIn(),
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    child.stdout.destroy();
    let stderr = "";
    child.stderr.on("data", (chunk) => (stderr += chunk));
    const code = await new Promise<number | null>((done) => child.on("close", done));
    expect(stderr).toBe("");
    expect(code).toBe(0);
    const done = (await new GitRefStateStore(repo).load("g/1"))!.state;
    expect(done.outcome).toBe("succeeded");
    const left = Object.values(done.tasks).flatMap((t) => t.attempts.filter((a) => a.outcome === null));
    expect(left).toEqual([]);
    expect(done.budget!.run.reservedMicros).toBe(0);
  });
});
