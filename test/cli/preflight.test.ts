/**
 * The agent is checked before a run spends anything: a missing or logged-out Claude Code, or a model
 * API that cannot be reached, is one line that says what to do, and the task's attempts are as they
 * were. Through the real binary and the real Claude Code CLI, with an empty HOME.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { chmodSync, mkdtempSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CLAUDE_BIN } from "../../harness/claude.ts";
import { git } from "../../src/attempt/git.ts";
import { checkAgent } from "../../src/attempt/preflight.ts";
import { startScriptedModel } from "../../src/scripted/model-server.ts";
import { main } from "../../src/cli/main.ts";
import { agentrelayLive, BIN, withStandIn } from "../support/cli.ts";
import { NO_NETNS } from "../support/namespaces.ts";
import { describeNeeding } from "../support/skips.ts";
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
  // What `agentrelay status` prints, asked in process: the binary's own start is not what is checked.
  let status = "";
  await main(["status", SAMPLE, "--repo", repo], { out: (t) => (status += `${t}\n`), err: () => {} });
  return `${ref} ${/hello_note\s+\S+\s+attempts \d+/.exec(status)?.[0]}`;
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
      "agentrelay: Claude Code was not found (/nowhere/claude): install it with `npm install -g @anthropic-ai/claude-code@2.1.197`, or name it with --claude PATH\n",
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
    // The sample's one attempt, with the scripted model, on the tests' stand-in for Claude Code (only
    // the second run's check needs the real one); the run then waits for a merge.
    const first = agentrelayWith(withStandIn(loggedOut()), "run", SAMPLE, "--repo", repo, "--scripted-model");
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
    // Not timed: Claude Code's own retries would outlast the test's patience; the check gives up on the first refusal.
    // The merge was not even noticed: nothing was written.
    expect(await attempts(repo)).toBe(before);
  });
});

describe("a credential the model API refuses, before a local run", () => {
  /** A model API that takes only `sk-ant-good` (the scripted model, as the real API answers a bad key). */
  const refusing = () => startScriptedModel(() => ({ text: "never asked" }), { keys: ["sk-ant-good"] });

  it("a key in the environment: one line naming the fix, and neither the run nor the agent starts", async () => {
    const model = await refusing();
    try {
      const repo = await tempRepo();
      const env = loggedOut({ ANTHROPIC_API_KEY: "sk-ant-bad", ANTHROPIC_BASE_URL: model.url });
      const result = await agentrelayLive(env, "run", SAMPLE, "--repo", repo, "--claude", CLAUDE_BIN);
      expect(result.code).toBe(1);
      expect(result.stderr).toBe(
        `agentrelay: the model API at ${model.url} (ANTHROPIC_BASE_URL) refused the credential (401: invalid x-api-key); set ANTHROPIC_API_KEY to a key the API accepts (or unset it to use your \`claude\` login), then run again\n`,
      );
      expect(await attempts(repo)).toBe("");
      expect(model.requests).toEqual([]);
    } finally {
      await model.close();
    }
  });

  it("a credentials file's key: the line names the entry to fix, and nothing starts", async () => {
    const model = await refusing();
    try {
      const repo = await tempRepo();
      const file = join(mkdtempSync(join(tmpdir(), "agentrelay-creds-")), "credentials.yaml");
      writeFileSync(file, "anthropic:\n  dev: {type: api_key, key: sk-ant-bad}\n");
      // The environment's key (which the API would take) does not stand in for the file's.
      const env = loggedOut({ ANTHROPIC_API_KEY: "sk-ant-good", ANTHROPIC_BASE_URL: model.url });
      const result = await agentrelayLive(
        env,
        ...["run", SAMPLE, "--repo", repo, "--claude", CLAUDE_BIN, "--credentials", file],
      );
      expect(result.stderr).toBe(
        `agentrelay: the model API at ${model.url} (ANTHROPIC_BASE_URL) refused the credential (401: invalid x-api-key); give anthropic.dev in ${file} a key the API accepts, then run again\n`,
      );
      expect(result.code).toBe(1);
      expect(await attempts(repo)).toBe("");
    } finally {
      await model.close();
    }
  });
});

describe("the credentials file as a user passes it", () => {
  it("one that does not exist: one line, no raw ENOENT", async () => {
    const repo = await tempRepo();
    const result = agentrelayWith(loggedOut(), "run", SAMPLE, "--repo", repo, "--credentials", "/nonexist");
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      'agentrelay: the credentials file /nonexist does not exist: pass the path of one (its format: docs/cli.md, "The credentials file"), or leave out --credentials to use your own login\n',
    );
  });

  it("one without an anthropic entry, and no login: says so, not 'pass --credentials FILE'", async () => {
    const repo = await tempRepo();
    const file = join(mkdtempSync(join(tmpdir(), "agentrelay-creds-")), "empty.yaml");
    writeFileSync(file, "{}\n");
    const result = agentrelayWith(
      loggedOut(),
      "run",
      SAMPLE,
      "--repo",
      repo,
      "--claude",
      CLAUDE_BIN,
      "--credentials",
      file,
    );
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      `agentrelay: Claude Code is not logged in here: ${file} has no anthropic entry: add one (its format: docs/cli.md, "The credentials file"), set ANTHROPIC_API_KEY, or run \`claude\` and log in (/login) (--scripted-model needs no account)\n`,
    );
    expect(await attempts(repo)).toBe("");
  });
});

describeNeeding(NO_NETNS, "the scripted model on a machine whose loopback is down", () => {
  it("says what is wrong (the loopback interface), not ANTHROPIC_BASE_URL, which the user never set", async () => {
    const repo = await tempRepo();
    // A network namespace of its own with `lo` left down: no route even to 127.0.0.1.
    const user = process.geteuid?.() === 0 ? [] : ["--user", "--map-root-user"];
    const result = spawnSync(
      "unshare",
      [...user, "--net", "--", process.execPath, BIN, "run", SAMPLE, "--repo", repo, "--scripted-model"],
      { encoding: "utf8", env: loggedOut() },
    );
    expect(result.status).toBe(1);
    expect(result.stderr).toMatch(
      /^agentrelay: the scripted model \(--scripted-model, which this run serves at http:\/\/127\.0\.0\.1:\d+\) cannot be reached: there is no route to 127\.0\.0\.1: the loopback interface is down here; bring it up \(`ip link set lo up`\), then run again\n$/,
    );
    expect(result.stderr).not.toContain("ANTHROPIC_BASE_URL");
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
      "Claude Code 1.0.128 is older than 2.1.0, the oldest agentrelay supports: update it with `npm install -g @anthropic-ai/claude-code@2.1.197`",
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
      await expect(
        checkAgent({ bin: CLAUDE_BIN, env: { ...env, ANTHROPIC_BASE_URL: url }, ...hints, timeoutMs: 300 }),
      ).rejects.toThrow(
        `the model API at ${url} (ANTHROPIC_BASE_URL) cannot be reached: no answer within 0.3 s`,
      );
    } finally {
      silent.close();
    }
  });

  it("checks an OAuth login with its bearer and beta, and refuses it only in words about the login", async () => {
    const seen: (string | string[] | undefined)[][] = [];
    let said = "";
    const api = (await import("node:http")).createServer((req, res) => {
      req.resume();
      seen.push([req.method, req.url, req.headers.authorization, req.headers["anthropic-beta"]]);
      res.writeHead(401, { "content-type": "application/json" });
      res.end(JSON.stringify({ type: "error", error: { type: "authentication_error", message: said } }));
    });
    await new Promise<void>((done) => api.listen(0, "127.0.0.1", done));
    try {
      const url = `http://127.0.0.1:${(api.address() as { port: number }).port}`;
      const oauth: NodeJS.ProcessEnv = {
        ...process.env,
        CLAUDE_CODE_OAUTH_TOKEN: "sk-ant-oat01-x",
        ANTHROPIC_BASE_URL: url,
      };
      delete oauth.ANTHROPIC_API_KEY;
      // An endpoint that takes no OAuth at all says nothing of the login: the run may go on.
      said = "OAuth authentication is currently not supported.";
      await expect(checkAgent({ bin: CLAUDE_BIN, env: oauth, ...hints })).resolves.toMatch(/^\d+\.\d+\.\d+$/);
      said = "Invalid bearer token";
      await expect(checkAgent({ bin: CLAUDE_BIN, env: oauth, ...hints })).rejects.toThrow(
        `the model API at ${url} (ANTHROPIC_BASE_URL) refused the credential (401: Invalid bearer token); log in, then run again`,
      );
      expect(seen[0]).toEqual([
        "POST",
        "/v1/messages/count_tokens",
        "Bearer sk-ant-oat01-x",
        "oauth-2025-04-20",
      ]);
    } finally {
      api.close();
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
