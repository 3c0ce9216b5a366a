/**
 * The in-job runner as a child process (local mode runs each attempt this way, in its own worktree):
 * `agentrelay attempt SPEC.json` reads the attempt's specification, runs it and writes the result
 * next to it. Progress lines go to stdout.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { parseGraph } from "../graph/load.ts";
import type { InputFile } from "../protocol/render.ts";
import { type AttemptResult, type PeerArtifacts, runAttempt } from "./run-attempt.ts";

export interface AttemptSpec {
  graphFile: string;
  graphText: string;
  task: string;
  attempt: number;
  repoDir: string;
  baseRef: string;
  workDir: string;
  inputFiles: InputFile[];
  peers: Record<string, PeerArtifacts>;
  params?: Record<string, unknown>;
  claude: {
    bin: string;
    env: Record<string, string>;
    maxTurns: number;
    timeoutMs: number;
    allowedTools: string[];
  };
  gateTimeoutMs: number;
  signalEntry: string;
  resultFile: string;
}

export async function attemptProcess(specFile: string): Promise<number> {
  const spec = JSON.parse(readFileSync(specFile, "utf8")) as AttemptSpec;
  const graph = parseGraph(spec.graphFile, spec.graphText);
  const task = graph.tasks.find((t) => t.id === spec.task);
  if (!task) throw new Error(`no task '${spec.task}' in ${spec.graphFile}`);
  let result: AttemptResult;
  try {
    result = await runAttempt({
      graph,
      graphText: spec.graphText,
      task,
      attempt: spec.attempt,
      repoDir: spec.repoDir,
      baseRef: spec.baseRef,
      workDir: spec.workDir,
      inputFiles: spec.inputFiles,
      peers: spec.peers,
      ...(spec.params ? { params: spec.params } : {}),
      claude: { ...spec.claude, env: { ...process.env, ...spec.claude.env } },
      gateTimeoutMs: spec.gateTimeoutMs,
      signalEntry: spec.signalEntry,
      log: (line) => process.stdout.write(`${line}\n`),
    });
  } catch (error) {
    result = {
      outcome: "failed",
      noPr: false,
      reason: `the runner failed: ${(error as Error).message}`,
      concerns: [],
      opsConcerns: [],
      summary: null,
      outputs: [],
      costUsd: 0,
      turns: 0,
      gates: [],
      commit: null,
      prTitle: null,
      prBody: null,
    };
  }
  writeFileSync(spec.resultFile, JSON.stringify(result, null, 2));
  return 0;
}
