/**
 * How tests and benchmarks start a local run against a scripted model server: with the tests' stand-in
 * for Claude Code by default (the runner's behaviour is what they show), or the real Claude Code CLI
 * where only it can show something.
 */
import { join } from "node:path";
import { parseGraph } from "../src/graph/load.ts";
import { type Agent, agentBin } from "./claude.ts";
import { REPO_ROOT } from "./paths.ts";

export type { Agent };

/** `runLocal`'s options for `text` (read as `path`) in `repo`, with the model at `modelUrl`. */
export function scriptedRun(
  repo: string,
  path: string,
  text: string,
  modelUrl: string,
  agent: Agent = "stand-in",
) {
  return {
    graph: parseGraph(path, text),
    graphText: text,
    repo,
    entry: join(REPO_ROOT, "bin/agentrelay.js"),
    claudeBin: agentBin(agent),
    claudeEnv: {
      ANTHROPIC_BASE_URL: modelUrl,
      ANTHROPIC_API_KEY: "sk-ant-scripted",
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
    } as Record<string, string>,
  };
}
