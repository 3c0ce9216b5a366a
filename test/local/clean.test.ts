/**
 * Cleaning up after a finished local run: the run removes its worktrees when it finishes (so its
 * branches can be deleted), and `agentrelay clean` removes the rest, archiving work no other branch
 * holds; a run still resumable is refused and nothing changes.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { git, gitRaw } from "../../src/attempt/git.ts";
import { cleanCommand } from "../../src/cli/commands/clean.ts";
import { notCleanable } from "../../src/local/clean.ts";
import { runLocal } from "../../src/local/run.ts";
import { demoAgent } from "../../src/scripted/demo-agent.ts";
import { type ScriptedModelServer, startScriptedModel } from "../../src/scripted/model-server.ts";
import { SCRIPTED_CLAUDE_BIN } from "../../harness/claude.ts";
import { WAIT_MS } from "../../harness/patience.ts";
import { tempRepo } from "../support/git.ts";
import { scriptedRun } from "../support/local-run.ts";

let server: ScriptedModelServer;
beforeAll(async () => {
  server = await startScriptedModel(demoAgent);
});
afterAll(() => server.close());

/** The graph written into the repository (as `clean` reads it) and the run's options. */
function setUp(repo: string, text: string) {
  mkdirSync(join(repo, ".workflow"), { recursive: true });
  const file = join(repo, ".workflow", "g.yaml");
  writeFileSync(file, text);
  const options = {
    ...scriptedRun(repo, ".workflow/g.yaml", text, server.url),
    attemptTimeoutMs: WAIT_MS,
    gateTimeoutMs: WAIT_MS,
  };
  return { file, options };
}

const worktrees = async (repo: string) =>
  (await git(repo, ["worktree", "list", "--porcelain"])).split("\n").filter((l) => l.startsWith("worktree "));

function io() {
  const out: string[] = [];
  return { out, io: { out: (t: string) => out.push(t), err: (t: string) => out.push(t) } };
}

const SUCCEEDS =
  "name: g\nworkstreams:\n  - id: w\n    auto_merge: true\ntasks:\n  - id: only\n    workstream_id: w\n    description: Write notes.\n";
const FAILS = `${SUCCEEDS}    completion_gate: test -f missing.txt\n    max_gate_attempts: 1\n`;

describe("a finished local run cleans up after itself", () => {
  it("removes its worktrees when it succeeds, so that its branches can be deleted", async () => {
    const repo = await tempRepo();
    const { options } = setUp(repo, SUCCEEDS);
    const result = await runLocal(options);
    expect(result.state.outcome).toBe("succeeded");
    expect(result.cleanedWorktrees).toBe(1);
    expect(await worktrees(repo)).toHaveLength(1); // the repository's own
    expect((await gitRaw(repo, ["branch", "-d", "agentrelay/g/only"])).code).toBe(0);
    expect((await gitRaw(repo, ["branch", "-d", "agentrelay/g/w/integration"])).code).toBe(0);
  });

  it("`clean` removes a failed run's branches and keeps the work no other branch holds under an archive ref", async () => {
    const repo = await tempRepo();
    const { file, options } = setUp(repo, FAILS);
    const result = await runLocal(options);
    expect(result.state.outcome).toBe("completed_with_failures");
    expect(await worktrees(repo)).toHaveLength(1);
    const work = await git(repo, ["rev-parse", "agentrelay/g/only"]);
    const { out, io: cli } = io();
    expect(await cleanCommand(file, repo, {}, cli)).toBe(0);
    expect(out).toEqual([
      "Cleaned run g/1: 0 worktrees and 2 branches removed; its state stays at refs/agentrelay/runs/g/1",
      "kept: agentrelay/g/only held work no other branch has; it is at refs/agentrelay/archive/g/1/agentrelay/g/only (git branch only refs/agentrelay/archive/g/1/agentrelay/g/only to get it back)",
    ]);
    expect(await git(repo, ["for-each-ref", "--format=%(refname)", "refs/heads/agentrelay/"])).toBe("");
    expect(await git(repo, ["rev-parse", "refs/agentrelay/archive/g/1/agentrelay/g/only"])).toBe(work);
    // The run's record stays: status still shows it.
    expect(await git(repo, ["rev-parse", "--verify", "refs/agentrelay/runs/g/1"])).toMatch(/^[0-9a-f]{40}$/);
  });

  it("`clean` refuses a run that can be resumed, in one line, and removes nothing", async () => {
    const repo = await tempRepo();
    const text =
      "name: g\nworkstreams:\n  - id: x\n  - id: y\ntasks:\n  - id: a\n    workstream_id: x\n    description: first\n  - id: b\n    workstream_id: y\n    dependencies: [a]\n    description: second\n";
    const { file, options } = setUp(repo, text);
    const result = await runLocal(options);
    expect(result.state.outcome).toBeNull();
    expect(result.cleanedWorktrees).toBeNull();
    const before = await git(repo, ["for-each-ref"]);
    const error = await cleanCommand(file, repo, {}, io().io).catch((e: Error) => e);
    expect((error as Error).message).toBe(
      "run g/1 has not finished and can be resumed: run it again (`agentrelay run`) or cancel it (`agentrelay cancel`), then clean; nothing was removed",
    );
    expect(await git(repo, ["for-each-ref"])).toBe(before);
    expect(await worktrees(repo)).toHaveLength(2);
  });

  it("a run with a live runner is active: refused", () => {
    const state = { runKey: "g/1", outcome: "succeeded" } as Parameters<typeof notCleanable>[0];
    expect(notCleanable(state, 4242)).toBe(
      "run g/1 is active (a runner is live, pid 4242): wait for it to finish, then clean",
    );
    expect(notCleanable(state, null)).toBeNull();
  });
});

describe("`agentrelay run`'s report", () => {
  it("says in one line that the finished run removed its worktrees, and how to remove the rest", async () => {
    const { runCommand } = await import("../../src/cli/commands/run.ts");
    const repo = await tempRepo();
    const { file } = setUp(repo, SUCCEEDS);
    const { out, io: cli } = io();
    // The tests' stand-in for Claude Code: the line is the runner's, whatever the agent.
    const claude = SCRIPTED_CLAUDE_BIN;
    expect(await runCommand(file, { repo, scriptedModel: true, verbose: false, claude }, cli)).toBe(0);
    expect(out.at(-1)).toBe(
      `Cleaned up: the run's worktrees are removed; its branches stay (\`agentrelay clean ${file} --repo ${repo}\` removes them)`,
    );
  });
});
