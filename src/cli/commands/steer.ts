/**
 * Steering a local run as slash commands steer one on GitHub. `status` prints the latest run's
 * report. `retry|cancel|reset` hand the command to the live runner (through its inbox) and print its
 * answer; with no runner live, they resume the run here with the command applied first.
 */
import { existsSync, rmSync } from "node:fs";
import { join, resolve } from "node:path";
import { loadGraphFile } from "../../graph/load.ts";
import { awaitAnswer, post, type SteeringCommand } from "../../local/inbox.ts";
import { GitRefStateStore } from "../../local/git-store.ts";
import { checkRepository, LocalRunError } from "../../local/repository.ts";
import { liveRunner } from "../../local/run-lock.ts";
import { workRootOf } from "../../local/run.ts";
import { latestRunNumber } from "../../local/runs.ts";
import { checkKnown, EXIT, type Io } from "../io.ts";
import { exitOf, runReport, statusJson } from "../run-report.ts";
import { runCommand, type RunCommandOptions } from "./run.ts";

export async function statusCommand(
  file: string,
  repoDir: string,
  io: Io,
  options: { json?: boolean } = {},
): Promise<number> {
  const graph = loadGraphFile(file);
  const repo = resolve(repoDir);
  await checkRepository(repo, graph);
  const latest = await latestRunNumber(repo, graph.name);
  const stored =
    latest === null ? null : await new GitRefStateStore(repo, graph).load(`${graph.name}/${latest}`);
  if (!stored)
    throw new LocalRunError(`graph '${graph.name}' has not run in ${repo}: start it with \`agentrelay run\``);
  const runner = liveRunner(workRootOf(repo, graph.name));
  io.out(
    options.json
      ? JSON.stringify(statusJson(stored.state, graph, { runner }))
      : runReport(stored.state, repo, graph, { runner }).trimStart(),
  );
  return exitOf(stored.state);
}

/** How long a steering command waits for the live runner's answer. */
const ANSWER_WAIT_MS = 15_000;

export async function steerCommand(
  file: string,
  command: SteeringCommand,
  options: RunCommandOptions,
  io: Io,
): Promise<number> {
  const graph = loadGraphFile(file);
  // A task or workstream the graph does not have is said before any runner or run is involved.
  const tasks = graph.tasks.map((t) => t.id);
  if (command.command === "budget" && command.target !== undefined)
    checkKnown("task or workstream", command.target, [...graph.workstreams.map((w) => w.id), ...tasks]);
  else if (command.command !== "budget" && command.task !== undefined)
    checkKnown("task", command.task, tasks);
  const workRoot = workRootOf(options.repo, graph.name);
  if (liveRunner(workRoot) === null) return runCommand(file, { ...options, command }, io);
  const id = post(workRoot, command);
  const answer = await awaitAnswer(workRoot, id, ANSWER_WAIT_MS);
  if (answer) {
    io.out(`${answer.ok ? "" : "refused: "}${answer.message}`);
    return answer.ok ? EXIT.ok : EXIT.failed;
  }
  // Not taken in time: withdrawn, so that it does not surprise anyone later.
  const waiting = join(workRoot, "inbox", `${id}.json`);
  if (existsSync(waiting)) rmSync(waiting, { force: true });
  throw new LocalRunError(
    `the live runner did not answer within ${ANSWER_WAIT_MS / 1000} s; check it with \`agentrelay status\` and try again`,
  );
}
