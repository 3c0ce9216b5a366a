/**
 * The in-job runner as a child process (local mode runs each attempt this way, in its own worktree):
 * `agentrelay attempt SPEC.json` reads the attempt's specification, and its secrets (a JSON object of
 * variables) on stdin, runs it and writes the result next to it. Progress lines go to stdout. The
 * secrets are never in the process's environment, which other processes of its user, the agent's
 * included, may read in /proc.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { parseGraph } from "../graph/load.ts";
import { recordProcessGroups } from "./bounded.ts";
import { type AttemptResult, failedAttempt } from "./attempt.ts";
import type { AttemptSpec } from "./attempt-spec.ts";
import { runAttempt } from "./run-attempt.ts";

/** The secrets on stdin (nothing when stdin is empty or not JSON: the process then has none). */
function pipedSecrets(): Record<string, string> {
  try {
    const parsed = JSON.parse(readFileSync(0, "utf8")) as unknown;
    if (!parsed || typeof parsed !== "object") return {};
    return Object.fromEntries(Object.entries(parsed).filter(([, v]) => typeof v === "string")) as Record<
      string,
      string
    >;
  } catch {
    return {};
  }
}

export async function attemptProcess(specFile: string): Promise<number> {
  const secrets = pipedSecrets();
  const spec = JSON.parse(readFileSync(specFile, "utf8")) as AttemptSpec;
  if (spec.processGroupsFile) recordProcessGroups(spec.processGroupsFile);
  const graph = parseGraph(spec.graphFile, spec.graphText);
  const task = graph.tasks.find((t) => t.id === spec.task);
  if (!task) throw new Error(`no task '${spec.task}' in ${spec.graphFile}`);
  let result: AttemptResult;
  try {
    const { graphFile: _file, task: _task, resultFile: _result, ...inputs } = spec;
    result = await runAttempt({
      ...inputs,
      graph,
      task,
      claude: { ...spec.claude, env: { ...process.env, ...secrets, ...spec.claude.env } },
      log: (line) => process.stdout.write(`${line}\n`),
    });
  } catch (error) {
    result = failedAttempt(`the runner failed: ${(error as Error).message}`);
  }
  writeFileSync(spec.resultFile, JSON.stringify(result, null, 2));
  return 0;
}
