/**
 * `agentrelay run` as a process among processes: killed outright, run twice at once, interrupted.
 * The real CLI, the real Claude Code, a scripted model this test steers.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type ScriptedModelServer,
  startScriptedModel,
  toolResults,
} from "../../src/scripted/model-server.ts";
import { CLAUDE_BIN } from "../../harness/claude.ts";
import { until } from "../../harness/patience.ts";
import { REPO_ROOT } from "../support/fixtures.ts";
import { tempRepo } from "../support/git.ts";

const GRAPH =
  "name: g\nworkstreams:\n  - id: default\n    auto_merge: true\ntasks:\n  - id: a\n    description: Write a.txt.\n";

/** What the agent does next: take its time (a marked sleep), or finish at once. */
let behaviour: { sleep: string | null } = { sleep: null };
let server: ScriptedModelServer;
beforeAll(async () => {
  server = await startScriptedModel((request) => {
    const steps = [
      ...(behaviour.sleep ? [`sleep ${behaviour.sleep}`] : []),
      "echo done > a.txt && agentrelay-complete",
    ];
    const done = toolResults(request).length;
    return done < steps.length
      ? { tools: [{ name: "Bash", input: { command: steps[done]!, description: "step" } }] }
      : { text: "Done." };
  });
});
afterAll(() => server.close());

function run(repo: string): { child: ChildProcess; exit: Promise<{ code: number | null; output: string }> } {
  const child = spawn(
    process.execPath,
    [
      join(REPO_ROOT, "bin/agentrelay.js"),
      "run",
      join(repo, "g.yaml"),
      "--repo",
      repo,
      "--claude",
      CLAUDE_BIN,
    ],
    {
      env: {
        ...process.env,
        ANTHROPIC_BASE_URL: server.url,
        ANTHROPIC_API_KEY: "sk-ant-runner-test",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
      },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  let output = "";
  child.stdout!.on("data", (d) => (output += d));
  child.stderr!.on("data", (d) => (output += d));
  const exit = new Promise<{ code: number | null; output: string }>((done) =>
    child.on("close", (code) => done({ code, output })),
  );
  return { child, exit };
}

/** Pids of running processes whose command line is exactly `command` (zombies aside). */
function processes(command: string): number[] {
  const out = execFileSync("ps", ["-eo", "pid=,stat=,args="], { encoding: "utf8" });
  return out
    .split("\n")
    .map((line) => /^\s*(\d+)\s+(\S+)\s+(.*)$/.exec(line))
    .filter((m): m is RegExpExecArray => m !== null && !m[2]!.startsWith("Z") && m[3] === command)
    .map((m) => Number(m[1]));
}

async function repoWithGraph(): Promise<string> {
  const repo = await tempRepo();
  writeFileSync(join(repo, "g.yaml"), GRAPH);
  return repo;
}

/** Sleeps this run of the tests alone starts (another run of them on the machine sleeps others). */
const SLEEPS = [`61.${process.pid}`, `62.${process.pid}`] as const;

describe("agentrelay run among processes", () => {
  it("killed outright, leaves its agent behind; the next run stops it, and resumes the attempt", async () => {
    const repo = await repoWithGraph();
    behaviour = { sleep: SLEEPS[0] };
    const first = run(repo);
    await until(() => processes(`sleep ${SLEEPS[0]}`).length === 1, "the attempt's gate runs");
    first.child.kill("SIGKILL");
    await first.exit;
    // Nothing stopped the agent: it would go on writing in the worktree the next run uses.
    expect(processes(`sleep ${SLEEPS[0]}`)).toHaveLength(1);

    behaviour = { sleep: null };
    const second = await run(repo).exit;
    expect(processes(`sleep ${SLEEPS[0]}`)).toEqual([]);
    expect(second.code).toBe(0);
    expect(second.output).toMatch(/Run g\/1: succeeded/);
    // The lost attempt did not count: the task merged with its second attempt.
    expect(second.output).toMatch(/a\s+merged\s+attempts 2/);
    expect(readFileSync(join(repo, ".git", "info", "exclude"), "utf8")).toContain("/.agentrelay/");
  });

  it("refuses a second live runner of the same graph, and stops its attempts when interrupted", async () => {
    const repo = await repoWithGraph();
    behaviour = { sleep: SLEEPS[1] };
    const first = run(repo);
    await until(() => processes(`sleep ${SLEEPS[1]}`).length === 1, "the attempt's gate runs");
    const second = await run(repo).exit;
    expect(second.code).toBe(1);
    expect(second.output.trim()).toBe(
      `agentrelay: another \`agentrelay run\` (pid ${first.child.pid}) is running graph 'g' in ${repo}; wait for it to finish, or stop it and run again`,
    );
    first.child.kill("SIGINT");
    const stopped = await first.exit;
    expect(stopped.code).toBe(130);
    expect(stopped.output).toContain("interrupted; run the same command again to resume");
    expect(processes(`sleep ${SLEEPS[1]}`)).toEqual([]);
  });
});
