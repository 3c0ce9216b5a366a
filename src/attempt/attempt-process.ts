/**
 * The in-job runner as a child process (local mode runs each attempt this way, in its own worktree):
 * `agentrelay attempt SPEC.json` reads the attempt's specification, runs it and writes the result
 * next to it. Progress lines go to stdout.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { parseGraph } from "../graph/load.ts";
import { recordProcessGroups } from "./bounded.ts";
import { type AttemptInputs, type AttemptResult, failedAttempt, runAttempt } from "./run-attempt.ts";

export interface AttemptSpec extends AttemptInputs {
  graphFile: string;
  task: string;
  /** Where the result is written, as JSON. */
  resultFile: string;
  /** Where the attempt records the process groups it starts (so that a crashed runner's are stopped). */
  processGroupsFile?: string;
}

export async function attemptProcess(specFile: string): Promise<number> {
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
      claude: { ...spec.claude, env: { ...process.env, ...spec.claude.env } },
      log: (line) => process.stdout.write(`${line}\n`),
    });
  } catch (error) {
    result = failedAttempt(`the runner failed: ${(error as Error).message}`);
  }
  writeFileSync(spec.resultFile, JSON.stringify(result, null, 2));
  return 0;
}
