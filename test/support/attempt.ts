/**
 * A task attempt set up as the runner meets it: a real repository, its integration branch, a worktree.
 * Its agent is the tests' stand-in for Claude Code unless a test needs the real CLI (`agent`).
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { onTestFinished } from "vitest";
import type { AttemptContext } from "../../src/attempt/attempt.ts";
import { DEFAULT_ALLOWED_TOOLS } from "../../src/attempt/attempt.ts";
import { parseGraph } from "../../src/graph/load.ts";
import { git } from "../../src/attempt/git.ts";
import { type Agent, agentBin } from "../../harness/claude.ts";
import { REPO_ROOT } from "./fixtures.ts";
import { tempRepo } from "./git.ts";
import { WAIT_MS } from "../../harness/patience.ts";

export async function attemptSetup(
  graphText: string,
  taskId: string,
  modelUrl: string,
  attempt = 1,
  agent: Agent = "stand-in",
): Promise<AttemptContext & { lines: string[] }> {
  const graph = parseGraph(".workflow/g.yaml", graphText);
  const task = graph.tasks.find((t) => t.id === taskId)!;
  const repo = await tempRepo();
  const integration = `agentrelay/${graph.name}/${task.workstreamId}/integration`;
  await git(repo, ["branch", integration, "main"]);
  const worktree = join(mkdtempSync(join(tmpdir(), "agentrelay-wt-")), "checkout");
  await git(repo, [
    "worktree",
    "add",
    "-q",
    "-b",
    `agentrelay/${graph.name}/${task.id}`,
    worktree,
    integration,
  ]);
  const workDir = mkdtempSync(join(tmpdir(), "agentrelay-attempt-"));
  // Made for one test and removed after it: the repository, the worktree's folder, the work directory.
  onTestFinished(() => {
    for (const dir of [repo, dirname(worktree), workDir]) rmSync(dir, { recursive: true, force: true });
  });
  const lines: string[] = [];
  return {
    graph,
    graphText,
    task,
    attempt,
    repoDir: worktree,
    baseRef: integration,
    workDir,
    inputFiles: [],
    peers: {},
    claude: {
      bin: agentBin(agent),
      env: {
        ...process.env,
        HOME: workDir,
        ANTHROPIC_BASE_URL: modelUrl,
        ANTHROPIC_API_KEY: "sk-ant-scripted",
        DISABLE_TELEMETRY: "1",
        DISABLE_AUTOUPDATER: "1",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
      },
      maxTurns: 30,
      timeoutMs: WAIT_MS,
      allowedTools: DEFAULT_ALLOWED_TOOLS,
    },
    gateTimeoutMs: WAIT_MS,
    signalEntry: join(REPO_ROOT, "bin/agentrelay.js"),
    log: (line) => lines.push(line),
    lines,
  };
}

export const read = (dir: string, file: string) => readFileSync(join(dir, file), "utf8");
