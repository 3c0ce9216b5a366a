/** How tests and benchmarks start a local run with the real Claude Code CLI against a scripted model server. */
import { join } from "node:path";
import { parseGraph } from "../src/graph/load.ts";
import { CLAUDE_BIN } from "./claude.ts";
import { REPO_ROOT } from "./paths.ts";

/** `runLocal`'s options for `text` (read as `path`) in `repo`, with the model at `modelUrl`. */
export function scriptedRun(repo: string, path: string, text: string, modelUrl: string) {
  return {
    graph: parseGraph(path, text),
    graphText: text,
    repo,
    entry: join(REPO_ROOT, "bin/agentrelay.js"),
    claudeBin: CLAUDE_BIN,
    claudeEnv: {
      ANTHROPIC_BASE_URL: modelUrl,
      ANTHROPIC_API_KEY: "sk-ant-scripted",
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
    } as Record<string, string>,
  };
}
