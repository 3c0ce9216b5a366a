/** Runs the real Claude Code CLI (installed from npm) headless against a scripted model server. */
import { spawn } from "node:child_process";
import { join } from "node:path";
import { REPO_ROOT } from "./paths.ts";

export const CLAUDE_BIN = join(REPO_ROOT, "node_modules/.bin/claude");

/**
 * The tests' stand-in for Claude Code (scripted-claude.mjs): the same command line and stream, the
 * scripted model's tools run by a small process instead of the real CLI. For runs whose behaviour is
 * the runner's (the attempt, its gates and guards, the engine), where the agent is only a means.
 * Started through its shell front (harness/scripted-claude), which answers the agent check's
 * `--version` without starting node.
 */
export const SCRIPTED_CLAUDE_BIN = join(REPO_ROOT, "harness/scripted-claude");

/** Which agent binary a run's attempts start: the stand-in (scripted-claude.mjs) or the real CLI. */
export type Agent = "stand-in" | "claude-code";

export const agentBin = (agent: Agent): string =>
  agent === "claude-code" ? CLAUDE_BIN : SCRIPTED_CLAUDE_BIN;

export interface ClaudeRun {
  code: number | null;
  lines: { type: string; subtype?: string; [key: string]: unknown }[];
  stderr: string;
}

export function runClaude(
  cwd: string,
  prompt: string,
  modelUrl: string,
  extraArgs: string[] = [],
  env: NodeJS.ProcessEnv = process.env,
): Promise<ClaudeRun> {
  const args = [
    "-p",
    prompt,
    "--output-format",
    "stream-json",
    "--verbose",
    "--max-turns",
    "20",
    ...extraArgs,
  ];
  const child = spawn(CLAUDE_BIN, args, {
    cwd,
    stdio: ["ignore", "pipe", "pipe"],
    env: {
      ...env,
      HOME: cwd,
      ANTHROPIC_BASE_URL: modelUrl,
      ANTHROPIC_API_KEY: "sk-ant-scripted",
      DISABLE_TELEMETRY: "1",
      DISABLE_AUTOUPDATER: "1",
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
    },
  });
  let out = "";
  let stderr = "";
  child.stdout.on("data", (d) => (out += d));
  child.stderr.on("data", (d) => (stderr += d));
  return new Promise((resolve) =>
    child.on("close", (code) =>
      resolve({
        code,
        stderr,
        lines: out.trim()
          ? out
              .trim()
              .split("\n")
              .map((l) => JSON.parse(l))
          : [],
      }),
    ),
  );
}
