import { mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { GraphError } from "../../src/graph/errors.ts";
import { parseGraph } from "../../src/graph/load.ts";
import { checkTiers, loadCredentials, selectAnthropic } from "../../src/local/credentials.ts";
import { git } from "../../src/attempt/git.ts";
import { runLocal } from "../../src/local/run.ts";
import { sequence, startScriptedModel } from "../../src/scripted/model-server.ts";
import { fixture } from "../support/fixtures.ts";
import { tempRepo } from "../support/git.ts";
import { scriptedRun } from "../support/local-run.ts";
import { describeNeeding, NO_FIXTURES } from "../support/skips.ts";

const dir = mkdtempSync(join(tmpdir(), "agentrelay-creds-"));
const file = (name: string, text: string) => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};
const errors = (path: string) => {
  try {
    loadCredentials(path);
  } catch (error) {
    return (error as GraphError).issues.map(
      (i) => `${i.line}:${i.column}: ${i.path ? `${i.path}: ` : ""}${i.message}`,
    );
  }
  return [];
};
const graph = (extra = "") =>
  parseGraph("g.yaml", `name: g\n${extra}tasks:\n  - id: a\n    description: x\n`);

let home: string | undefined;
beforeEach(() => {
  home = process.env.HOME;
  process.env.HOME = dir;
});
afterEach(() => {
  process.env.HOME = home;
});

describeNeeding(NO_FIXTURES, "agentrelay's credentials examples", () => {
  it("read key_file from the home directory, and report a missing one at its node", () => {
    const path = fixture("agentrelay/docs-examples/credentials-api-key.yaml");
    expect(errors(path)).toEqual([
      "21:15: anthropic.api_key.key_file: key file '" +
        join(dir, ".config/anthropic/api_key") +
        "' does not exist",
    ]);
    mkdirSync(join(dir, ".config/anthropic"), { recursive: true });
    writeFileSync(join(dir, ".config/anthropic/api_key"), "sk-ant-from-file\n");
    const credentials = loadCredentials(path);
    expect(credentials.anthropic).toEqual([{ name: "api_key", type: "api_key", key: "sk-ant-from-file" }]);
    expect(credentials.tokenTiers!.read_only).toEqual({ GH_TOKEN: "ghp_readonly_xxxx" });
  });

  it("need a choice between several credentials", () => {
    mkdirSync(join(dir, ".config/anthropic"), { recursive: true });
    writeFileSync(join(dir, ".config/anthropic/api_key"), "sk-ant-from-file\n");
    const both = loadCredentials(fixture("agentrelay/docs-examples/credentials-both.yaml"));
    expect(() => selectAnthropic(both, undefined, graph())).toThrow(
      "several anthropic credentials (dev_api_key, max_plan): choose one with --anthropic-credential or anthropic_credential",
    );
    expect(selectAnthropic(both, undefined, graph("anthropic_credential: max_plan\n"))).toMatchObject({
      type: "oauth",
    });
    expect(selectAnthropic(both, "dev_api_key", graph("anthropic_credential: max_plan\n"))).toMatchObject({
      type: "api_key",
    });
    expect(() => selectAnthropic(both, "nope", graph())).toThrow(
      "unknown anthropic credential 'nope'; the credentials file has: dev_api_key, max_plan",
    );
  });
});

describe("credentials validation", () => {
  it.each([
    ["empty file", "", ["1:1: the file is empty"]],
    ["not a mapping", "- a\n", ["1:1: the credentials file must be a mapping"]],
    [
      "token tier not a mapping",
      "token_tiers:\n  standard: x\n",
      ["2:13: token_tiers.standard: must be a mapping of environment variable to value"],
    ],
    [
      "tier setting the API key",
      "token_tiers:\n  standard: {ANTHROPIC_API_KEY: k}\n",
      ["2:33: token_tiers.standard: may not set ANTHROPIC_API_KEY; use the anthropic section"],
    ],
    [
      "unknown type",
      "anthropic:\n  k: {type: token}\n",
      ["2:13: anthropic.k.type: invalid type 'token'. Allowed: api_key, oauth"],
    ],
    [
      "key and key_file",
      "anthropic:\n  k: {type: api_key, key: a, key_file: b}\n",
      ["2:6: anthropic.k: an api_key credential needs exactly one of 'key' or 'key_file'"],
    ],
    [
      "oauth without a path",
      "anthropic:\n  m: {type: oauth}\n",
      ["2:6: anthropic.m: an oauth credential needs 'path'"],
    ],
  ])("%s", (_, text, expected) => {
    expect(errors(file("c.yaml", text))).toEqual(expected);
  });

  it("accepts an empty mapping, and needs every token tier the graph uses", () => {
    expect(loadCredentials(file("empty.yaml", "{}\n"))).toEqual({ tokenTiers: null, anthropic: [] });
    const tiers = loadCredentials(file("t.yaml", "token_tiers:\n  standard: {GH_TOKEN: s}\n"));
    expect(() => checkTiers(tiers, graph("isolation: {token_tier: read_only}\n"))).toThrow(
      "the credentials file has no token tier 'read_only', which the graph's tasks use",
    );
    expect(() => checkTiers(tiers, graph())).not.toThrow();
  });
});

describe("credentials in a local run", () => {
  /** The agent looks for credentials: its environment, its home, the files there. */
  const snoop = {
    name: "Bash",
    input: {
      command:
        'printenv > env.txt && (ls -laR "$HOME" && cat "$HOME"/.claude/* "$HOME"/.claude.json 2>/dev/null || true) > home.txt && printf %s "$GH_TOKEN" > token.txt && agentrelay-complete',
      description: "look around",
    },
  };

  /**
   * The environment of every attempt process (`agentrelay attempt SPEC`) of `repo` while it runs, as
   * /proc shows it to any process of its user (read here, by the test, at each request to the model).
   */
  const attemptEnvironments: string[] = [];
  let repo = "";
  const readAttemptEnvironments = () => {
    for (const pid of readdirSync("/proc").filter((p) => /^\d+$/.test(p))) {
      try {
        const args = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
        if (args.includes("attempt") && args.some((a) => a.startsWith(repo)))
          attemptEnvironments.push(readFileSync(`/proc/${pid}/environ`, "utf8"));
      } catch {
        // gone, or not ours to read
      }
    }
  };

  async function run(credentialsYaml: string, extraEnv: Record<string, string> = {}) {
    const script = sequence([snoop], "Done.");
    const server = await startScriptedModel((request) => {
      readAttemptEnvironments();
      return script(request);
    });
    try {
      repo = await tempRepo();
      const text = "name: g\nisolation: {token_tier: read_only}\ntasks:\n  - id: a\n    description: x\n";
      const credentials = loadCredentials(file("run.yaml", credentialsYaml));
      const { state, workRoot } = await runLocal({
        // The real Claude Code: what it keeps in its home (.claude/, .claude.json) is searched too.
        ...scriptedRun(repo, "g.yaml", text, server.url, "claude-code"),
        // The key comes from the credentials file here, not the environment.
        claudeEnv: {
          ANTHROPIC_BASE_URL: server.url,
          CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
          ...extraEnv,
        },
        credentials: { anthropic: credentials.anthropic[0] ?? null, tokenTiers: credentials.tokenTiers },
      });
      const show = (path: string) => git(repo, ["show", `agentrelay/g/default/integration:${path}`]);
      return { state, workRoot, server, show, files: await allFiles(repo) };
    } finally {
      await server.close();
    }
  }

  /** Every file the runner left in the repository's .agentrelay folder (not the agent's own checkout). */
  async function allFiles(repo: string): Promise<string> {
    const texts: string[] = [];
    const walk = (dir: string) => {
      for (const entry of readdirSync(dir, { withFileTypes: true })) {
        const path = join(dir, entry.name);
        if (entry.isDirectory()) {
          if (entry.name !== "workstreams") walk(path);
        } else if (entry.isFile()) texts.push(readFileSync(path, "latin1"));
      }
    };
    walk(join(repo, ".agentrelay"));
    return texts.join("\n");
  }

  it("give each task its tier's variables; the API key stays with the runner, out of the agent and off the disk", async () => {
    const { state, server, show, files } = await run(
      "token_tiers:\n  read_only: {GH_TOKEN: ghs_readonly_token}\nanthropic:\n  key: {type: api_key, key: sk-ant-from-credentials}\n",
    );
    expect(state.tasks.a!.status).toBe("merged");
    expect(await show("token.txt")).toBe("ghs_readonly_token");
    // The agent sees the proxy's address and a throwaway key, nothing else.
    const env = await show("env.txt");
    const home = await show("home.txt");
    for (const seen of [env, home]) expect(seen).not.toContain("sk-ant-from-credentials");
    expect(env).toMatch(/^ANTHROPIC_API_KEY=sk-ant-agentrelay-[0-9a-f]{48}$/m);
    expect(env).toMatch(/^ANTHROPIC_BASE_URL=http:\/\/127\.0\.0\.1:\d+$/m);
    // The model was reached with the real key, through the runner's proxy.
    expect(server.credentials.filter(Boolean).every((c) => c === "sk-ant-from-credentials")).toBe(true);
    // No process of the runner holds it in its environment, which a process of the same user (the
    // agent's, locally) can read: the attempt process got it on its stdin.
    expect(attemptEnvironments.length).toBeGreaterThan(0);
    for (const environment of attemptEnvironments) {
      expect(environment).not.toContain("sk-ant-from-credentials");
      expect(environment).not.toContain("ghs_readonly_token");
    }
    // Nothing left on disk holds a secret.
    expect(files).not.toContain("sk-ant-from-credentials");
    expect(files).not.toContain("ghs_readonly_token");
  });

  it("use a Claude login file through the proxy, as a bearer token the agent never sees", async () => {
    const login = file(
      "credentials.json",
      JSON.stringify({
        claudeAiOauth: { accessToken: "sk-ant-oat01-login-token", expiresAt: Date.now() + 3_600_000 },
      }),
    );
    const { state, server, show, files } = await run(`anthropic:\n  max: {type: oauth, path: ${login}}\n`);
    expect(state.tasks.a!.status).toBe("merged");
    for (const seen of [await show("env.txt"), await show("home.txt"), files])
      expect(seen).not.toContain("sk-ant-oat01-login-token");
    expect(server.credentials.filter(Boolean).every((c) => c === "Bearer sk-ant-oat01-login-token")).toBe(
      true,
    );
  });
});
