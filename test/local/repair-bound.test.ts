/**
 * A repair whose runner was killed counts (security case 81): through the real binary and a scripted
 * model (its tools run by the tests' stand-in for Claude Code: the count is the runner's), a
 * workstream's integration gate fails on the tree that would land, a repair starts, and the runner is
 * killed (SIGKILL) while the repair's agent works. The next run
 * finds the repair lost: it counts against `max_repair_attempts` and is charged its cap, so a runner
 * killed again and again cannot repair without bound.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SCRIPTED_CLAUDE_BIN } from "../../harness/claude.ts";
import { GitRefStateStore } from "../../src/local/git-store.ts";
import {
  promptOf,
  type ScriptedModelServer,
  startScriptedModel,
  toolResults,
} from "../../src/scripted/model-server.ts";
import { REPO_ROOT } from "../support/fixtures.ts";
import { tempRepo } from "../support/git.ts";

const GRAPH = `name: g
max_cost_usd: 5
max_attempt_cost_usd: 0.5
min_attempt_cost_usd: 0.001
max_repair_attempts: 1
workstreams:
  - id: w
    auto_merge: true
    integration_gate: test -f fixed.txt
tasks:
  - id: a
    workstream_id: w
    description: Write a.txt.
`;

/** A sleep only this run of the tests starts. */
const SLEEP = `63.${process.pid}`;
let repairSleeps = true;
let server: ScriptedModelServer;
beforeAll(async () => {
  server = await startScriptedModel((request) => {
    const repair = promptOf(request).includes("Repair `");
    const steps = repair
      ? repairSleeps
        ? [`sleep ${SLEEP}`]
        : []
      : ["echo done > a.txt && agentrelay-complete"];
    const done = toolResults(request).length;
    return done < steps.length
      ? { tools: [{ name: "Bash", input: { command: steps[done]!, description: "step" } }] }
      : { text: "Nothing changed." };
  });
});
afterAll(() => server.close());

function run(repo: string): { child: ChildProcess; exit: Promise<number | null> } {
  const child = spawn(
    process.execPath,
    [
      join(REPO_ROOT, "bin/agentrelay.js"),
      "run",
      join(repo, "g.yaml"),
      "--repo",
      repo,
      "--claude",
      SCRIPTED_CLAUDE_BIN,
    ],
    {
      env: {
        ...process.env,
        ANTHROPIC_BASE_URL: server.url,
        ANTHROPIC_API_KEY: "sk-ant-repair-bound",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
      },
      stdio: ["ignore", "ignore", "ignore"],
    },
  );
  return { child, exit: new Promise((done) => child.on("close", done)) };
}

const sleeping = () =>
  execFileSync("ps", ["-eo", "args="], { encoding: "utf8" })
    .split("\n")
    .some((line) => line === `sleep ${SLEEP}`);

describe("a repair whose runner was killed", () => {
  it("counts against max_repair_attempts and is charged its cap", async () => {
    const repo = await tempRepo();
    writeFileSync(join(repo, "g.yaml"), GRAPH);
    const first = run(repo);
    const end = Date.now() + 120_000;
    while (!sleeping()) {
      if (Date.now() > end) throw new Error("the repair never started");
      await new Promise((done) => setTimeout(done, 200));
    }
    first.child.kill("SIGKILL");
    await first.exit;
    // Killed again and again, it would repair again and again: the next run's repair would not sleep.
    repairSleeps = false;
    await run(repo).exit;
    const state = (await new GitRefStateStore(repo).load("g/1"))!.state;
    const repairs = state.workstreams.w!.verification!.repairs;
    expect(repairs.map((r) => r.outcome)).toEqual(["lost"]);
    expect(repairs[0]!.costMicros).toBe(repairs[0]!.capMicros);
    expect(repairs[0]!.capMicros).toBeGreaterThan(0);
    expect(state.budget!.run.spentMicros).toBeGreaterThanOrEqual(repairs[0]!.capMicros!);
    expect(state.workstreams.w!.reason).toMatch(/1 repair attempt did not fix it/);
    expect(sleeping()).toBe(false);
  }, 300_000);
});
