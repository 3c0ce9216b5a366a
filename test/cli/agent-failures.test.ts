/**
 * What a user reads when an attempt's agent cannot work, from the run's own report: Claude Code's
 * own words and where all of them are; a credential refused in the middle of a run, with the fix and
 * the command that runs the task again. Through the real binary, as a user runs it.
 */
import { chmodSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CLAUDE_BIN } from "../../harness/claude.ts";
import { agentrelayLive } from "../support/cli.ts";
import { REPO_ROOT } from "../support/fixtures.ts";
import { tempRepo } from "../support/git.ts";

const SAMPLE = join(REPO_ROOT, "templates/sample-graph.yaml");

/** A user's environment without a Claude login or a credential variable of their own. */
function userEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, HOME: mkdtempSync(join(tmpdir(), "agentrelay-home-")) };
  for (const name of [
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "CLAUDE_CODE_OAUTH_TOKEN",
    "ANTHROPIC_BASE_URL",
  ])
    delete env[name];
  return { ...env, ...extra };
}

/** The report's line for the sample's one task. */
const taskLine = (stdout: string) => stdout.split("\n").find((l) => l.startsWith("  hello_note "));

describe("an attempt's agent that cannot work, in the run's report", () => {
  it("a claude that is not logged in: its own words, and where all of its output is", async () => {
    const claude = join(mkdtempSync(join(tmpdir(), "agentrelay-claude-")), "claude");
    // Passes the check (a version), then says what a Claude Code without a login says, and exits 1.
    writeFileSync(
      claude,
      '#!/bin/sh\nif [ "$1" = --version ]; then echo "2.1.197 (Claude Code)"; exit 0; fi\necho "Not logged in · Please run /login"\nexit 1\n',
    );
    chmodSync(claude, 0o755);
    const repo = await tempRepo();
    const result = await agentrelayLive(
      userEnv(),
      ...["run", SAMPLE, "--repo", repo, "--scripted-model", "--claude", claude],
    );
    const log = join(repo, ".agentrelay/hello/tasks/hello_note/work/attempts/1/agent.log");
    expect(taskLine(result.stdout)).toBe(
      `  hello_note               failed               attempts 1  $0.00  (Claude Code exited with code 1: Not logged in · Please run /login; see ${log} for all of its output)`,
    );
    expect(readFileSync(log, "utf8")).toContain("Not logged in · Please run /login");
  });

  it("a credential refused during the attempt: the fix, then the command that runs the task again", async () => {
    // The API took the key at the check (counting tokens), then refuses it (a key revoked meanwhile).
    const api = createServer((req, res) => {
      req.resume();
      if (req.method === "HEAD") return res.end();
      const counting = req.url?.startsWith("/v1/messages/count_tokens");
      res.writeHead(counting ? 200 : 401, { "content-type": "application/json" });
      res.end(
        counting
          ? '{"input_tokens": 5}'
          : '{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}',
      );
    });
    await new Promise<void>((resolve) => api.listen(0, "127.0.0.1", resolve));
    try {
      const url = `http://127.0.0.1:${(api.address() as AddressInfo).port}`;
      const repo = await tempRepo();
      const result = await agentrelayLive(
        userEnv({ ANTHROPIC_API_KEY: "sk-ant-revoked", ANTHROPIC_BASE_URL: url }),
        ...["run", SAMPLE, "--repo", repo, "--claude", CLAUDE_BIN],
      );
      expect(taskLine(result.stdout)).toBe(
        `  hello_note               failed               attempts 1  $0.00  (Claude Code could not authenticate: the model API at ${url} (ANTHROPIC_BASE_URL) refused the credential (401: invalid x-api-key); set ANTHROPIC_API_KEY to a key the API accepts (or unset it to use your \`claude\` login), then run \`agentrelay retry ${SAMPLE} hello_note --repo ${repo}\`)`,
      );
    } finally {
      api.close();
    }
  });
});
