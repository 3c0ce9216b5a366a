/**
 * The agent is checked before a run spends anything: a missing or logged-out Claude Code, or a model
 * API that cannot be reached, is one line that says what to do, and the task's attempts are as they
 * were. Through the real binary and the real Claude Code CLI, with an empty HOME.
 */
import { execFileSync } from "node:child_process";
import { chmodSync, mkdtempSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CLAUDE_BIN } from "../../harness/claude.ts";
import { git } from "../../src/attempt/git.ts";
import { checkAgent } from "../../src/attempt/preflight.ts";
import { agentrelayWith } from "../support/cli.ts";
import { REPO_ROOT } from "../support/fixtures.ts";
import { tempRepo } from "../support/git.ts";

const SAMPLE = join(REPO_ROOT, "templates/sample-graph.yaml");

/** The environment of someone with no Claude login and no key: an empty HOME, no credential variable. */
function loggedOut(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    HOME: mkdtempSync(join(tmpdir(), "agentrelay-home-")),
    ...extra,
  };
  for (const name of [
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "CLAUDE_CODE_OAUTH_TOKEN",
    "ANTHROPIC_BASE_URL",
  ])
    if (!(name in extra)) delete env[name];
  return env;
}

/** The run's state ref and what its tasks' attempts are ("" when the run never started). */
async function attempts(repo: string): Promise<string> {
  const ref = await git(repo, ["for-each-ref", "--format=%(objectname)", "refs/agentrelay/runs/"]);
  if (!ref) return "";
  const status = agentrelayWith(loggedOut(), "status", SAMPLE, "--repo", repo);
  return `${ref} ${/hello_note\s+\S+\s+attempts \d+/.exec(status.stdout)?.[0]}`;
}

/** A port nothing listens on. */
async function closedPort(): Promise<number> {
  const server: Server = createServer();
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  const { port } = server.address() as { port: number };
  await new Promise((done) => server.close(done));
  return port;
}

describe("the agent check before a local run", () => {
  it("a missing claude: one line, and the run does not start", async () => {
    const repo = await tempRepo();
    const result = agentrelayWith(loggedOut(), "run", SAMPLE, "--repo", repo, "--claude", "/nowhere/claude");
    expect(result.code).toBe(1);
    expect(result.stdout).toBe("");
    expect(result.stderr).toBe(
      "agentrelay: Claude Code was not found (/nowhere/claude): install it with `npm install -g @anthropic-ai/claude-code`, or name it with --claude PATH\n",
    );
    expect(await attempts(repo)).toBe("");
  });

  it("a logged-out claude (empty HOME, no key): one line, and the run does not start", async () => {
    const repo = await tempRepo();
    const result = agentrelayWith(loggedOut(), "run", SAMPLE, "--repo", repo, "--claude", CLAUDE_BIN);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      "agentrelay: Claude Code is not logged in here: run `claude` and log in (/login), set ANTHROPIC_API_KEY, or pass --credentials FILE (--scripted-model needs no account)\n",
    );
    expect(await attempts(repo)).toBe("");
  });

  it("a model API that cannot be reached: in seconds, about the network, attempts untouched", async () => {
    const repo = await tempRepo();
    // The sample's one attempt, with the scripted model; the run then waits for a merge.
    const first = agentrelayWith(loggedOut(), "run", SAMPLE, "--repo", repo, "--scripted-model");
    expect(first.stdout).toContain("hello_note");
    const before = await attempts(repo);
    expect(before).toMatch(/attempts 1$/);
    await git(repo, ["merge", "-q", "--no-edit", "agentrelay/hello/hello/integration"]);

    const url = `http://127.0.0.1:${await closedPort()}`;
    const env = loggedOut({ ANTHROPIC_API_KEY: "sk-ant-test", ANTHROPIC_BASE_URL: url });
    const result = agentrelayWith(env, "run", SAMPLE, "--repo", repo, "--claude", CLAUDE_BIN);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      `agentrelay: the model API at ${url} (ANTHROPIC_BASE_URL) cannot be reached: the connection was refused; check that it is up (or unset ANTHROPIC_BASE_URL), then run again\n`,
    );
    expect(result.ms).toBeLessThan(10_000);
    // The merge was not even noticed: nothing was written.
    expect(await attempts(repo)).toBe(before);
  });
});

describe("checkAgent", () => {
  const fake = (script: string) => {
    const bin = join(mkdtempSync(join(tmpdir(), "agentrelay-fake-claude-")), "claude");
    writeFileSync(bin, `#!/bin/sh\n${script}\n`);
    chmodSync(bin, 0o755);
    return bin;
  };
  const hints = { nameAnother: "name it with --claude PATH", logIn: "log in" };
  const env = { ...process.env, ANTHROPIC_API_KEY: "sk-ant-test" };

  it("refuses a Claude Code older than it supports, and what is not Claude Code", async () => {
    await expect(checkAgent({ bin: fake("echo '1.0.128 (Claude Code)'"), env, ...hints })).rejects.toThrow(
      "Claude Code 1.0.128 is older than 2.1.0, the oldest agentrelay supports: update it with `npm install -g @anthropic-ai/claude-code@latest`",
    );
    await expect(checkAgent({ bin: fake("echo hello"), env, ...hints })).rejects.toThrow(
      "does not look like Claude Code (`--version` printed 'hello'): name it with --claude PATH",
    );
  });

  it("gives up on a model API that accepts and never answers within its timeout", async () => {
    const silent = createServer(() => {});
    await new Promise<void>((done) => silent.listen(0, "127.0.0.1", done));
    try {
      const url = `http://127.0.0.1:${(silent.address() as { port: number }).port}`;
      const started = Date.now();
      await expect(
        checkAgent({ bin: CLAUDE_BIN, env: { ...env, ANTHROPIC_BASE_URL: url }, ...hints, timeoutMs: 300 }),
      ).rejects.toThrow(
        `the model API at ${url} (ANTHROPIC_BASE_URL) cannot be reached: no answer within 0.3 s`,
      );
      expect(Date.now() - started).toBeLessThan(5_000);
    } finally {
      silent.close();
    }
  });

  it("passes the Claude Code this package installs, with a credential and a model API that answers", async () => {
    const version = execFileSync(CLAUDE_BIN, ["--version"], { encoding: "utf8" }).split(" ")[0];
    const answering = (await import("node:http")).createServer((_, res) => res.end());
    await new Promise<void>((done) => answering.listen(0, "127.0.0.1", done));
    try {
      const url = `http://127.0.0.1:${(answering.address() as { port: number }).port}`;
      expect(await checkAgent({ bin: CLAUDE_BIN, env: { ...env, ANTHROPIC_BASE_URL: url }, ...hints })).toBe(
        version,
      );
    } finally {
      answering.close();
    }
  });
});
