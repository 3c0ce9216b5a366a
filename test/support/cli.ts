/** The real `agentrelay` binary, run as users and other tools run it, and graph files to give it. */
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SCRIPTED_CLAUDE_BIN } from "../../harness/claude.ts";
import { REPO_ROOT } from "./fixtures.ts";

export const BIN = join(REPO_ROOT, "bin/agentrelay.js");

/** Runs `agentrelay ARGS...` in this process's environment (or `env`) and waits for it. */
export function agentrelay(...args: string[]) {
  return agentrelayWith(process.env, ...args);
}

export function agentrelayWith(env: NodeJS.ProcessEnv, ...args: string[]) {
  const started = Date.now();
  const result = spawnSync(process.execPath, [BIN, ...args], { encoding: "utf8", env });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr, ms: Date.now() - started };
}

/**
 * `agentrelayWith`, without blocking this process: for a run whose model server (or any other
 * loopback stand-in) lives in this process and must go on answering.
 */
export function agentrelayLive(env: NodeJS.ProcessEnv, ...args: string[]) {
  const started = Date.now();
  const child = spawn(process.execPath, [BIN, ...args], { env });
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
  return new Promise<{ code: number | null; stdout: string; stderr: string; ms: number }>((resolve) =>
    child.on("close", (code) => resolve({ code, stdout, stderr, ms: Date.now() - started })),
  );
}

/**
 * `env` (this process's by default) in which `agentrelay run` starts the tests' stand-in for Claude
 * Code (AGENTRELAY_CLAUDE): for runs whose behaviour is the runner's, where the agent is only a means.
 */
export const withStandIn = (env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv => ({
  ...env,
  AGENTRELAY_CLAUDE: SCRIPTED_CLAUDE_BIN,
});

/** `text` written as g.yaml in a new temporary folder; its path. */
export function graphFile(text: string): string {
  const file = join(mkdtempSync(join(tmpdir(), "agentrelay-graph-")), "g.yaml");
  writeFileSync(file, text);
  return file;
}
