import { existsSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { checkTiers, loadCredentials, selectAnthropic } from "../../local/credentials.ts";
import { demoAgent } from "../../scripted/demo-agent.ts";
import { runLocal } from "../../local/run.ts";
import { uncommittedChanges } from "../../local/repository.ts";
import { cleanedLine } from "../../local/clean.ts";
import { startScriptedModel } from "../../scripted/model-server.ts";
import { SCRIPTED_MODEL_VARIABLE } from "../../attempt/network.ts";
import type { Answer, SteeringCommand } from "../../local/inbox.ts";
import { LiveView } from "../live-view.ts";
import { exitOf, runReport } from "../run-report.ts";
import { parseGraph } from "../../graph/load.ts";
import { readGraphText } from "../../graph/dialect.ts";
import { paramErrors, workflowParams } from "./render.ts";
import { EXIT, type Io } from "../io.ts";

export interface RunCommandOptions {
  repo: string;
  /** Clones of the other repositories the graph names (`--repo NAME=PATH`). */
  repositories?: Record<string, string>;
  /** `--repos FILE`: the clones of the rest, a YAML mapping of names to paths. */
  repositoriesFile?: string | undefined;
  scriptedModel: boolean;
  claude?: string | undefined;
  maxTurns?: number | undefined;
  verbose: boolean;
  credentials?: string | undefined;
  anthropicCredential?: string | undefined;
  params?: Record<string, unknown>;
  /** Start a new run instead of resuming the latest. */
  newRun?: boolean;
  /** A steering command to apply first (no runner was live to take it). */
  command?: SteeringCommand;
}

/** The package's own `agentrelay` entry: attempts and in-job commands run through it. */
function packageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, "package.json"))) dir = dirname(dir);
  return dir;
}

/** `--claude`, then $AGENTRELAY_CLAUDE, then the Claude Code this package installed, then `claude` on PATH. */
function claudeBinary(explicit: string | undefined): string {
  if (explicit) return explicit;
  if (process.env.AGENTRELAY_CLAUDE) return process.env.AGENTRELAY_CLAUDE;
  const bundled = join(packageRoot(), "node_modules/.bin/claude");
  return existsSync(bundled) ? bundled : "claude";
}

/** `agentrelay run FILE --repo DIR [--scripted-model]`. */
export async function runCommand(file: string, options: RunCommandOptions, io: Io): Promise<number> {
  const graphText = readGraphText(file);
  const graph = parseGraph(file, graphText);
  const repo = resolve(options.repo);
  const params = workflowParams(file, options.params ?? {});
  const problems = paramErrors(graph, params);
  if (problems) throw problems;
  const credentials = options.credentials ? loadCredentials(options.credentials) : null;
  if (credentials) checkTiers(credentials, graph);
  const anthropic = credentials ? selectAnthropic(credentials, options.anthropicCredential, graph) : null;
  const server = options.scriptedModel ? await startScriptedModel(demoAgent) : null;
  const claudeEnv: Record<string, string> = server
    ? {
        ANTHROPIC_BASE_URL: server.url,
        ANTHROPIC_API_KEY: "sk-ant-scripted-model",
        [SCRIPTED_MODEL_VARIABLE]: "1",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
      }
    : {};
  const view = new LiveView(
    {
      write: (text) => process.stdout.write(text),
      get rows() {
        return process.stdout.rows;
      },
      get columns() {
        return process.stdout.columns;
      },
    },
    Boolean(process.stdout.isTTY) && !options.verbose,
  );
  // Interrupted, the run stops its attempts (their agents with them) and ends; the next run resumes.
  const stop = new AbortController();
  const interrupt = () => stop.abort();
  process.once("SIGINT", interrupt);
  process.once("SIGTERM", interrupt);
  // The terminal or the session that started it went away: stopped as cleanly as with Ctrl-C.
  process.once("SIGHUP", interrupt);
  let refused = false;
  // In the try: whatever is refused (a directory that is not there), the scripted model's server closes.
  try {
    if (await uncommittedChanges(repo))
      io.err(
        `note: ${repo} has uncommitted changes; the run starts from its last commit (HEAD) without them: commit them first to include them`,
      );
    const result = await runLocal({
      graph,
      graphText,
      repo,
      ...(options.repositories ? { repositories: options.repositories } : {}),
      ...(options.repositoriesFile ? { repositoriesFile: options.repositoriesFile } : {}),
      entry: join(packageRoot(), "bin/agentrelay.js"),
      claudeBin: claudeBinary(options.claude),
      claudeEnv,
      params,
      ...(credentials
        ? { credentials: { file: options.credentials, anthropic, tokenTiers: credentials.tokenTiers } }
        : {}),
      ...(options.maxTurns ? { maxTurns: options.maxTurns } : {}),
      onState: (state) => view.update(state),
      onLog: (task, line) => {
        if (options.verbose) io.out(`${task ? `[${task}] ` : ""}${line}`);
      },
      // The runner's own errors are shown whatever the verbosity: the run's report alone would hide them.
      onError: (line) => io.err(line),
      signal: stop.signal,
      ...(options.newRun ? { newRun: true } : {}),
      ...(options.command
        ? {
            command: options.command,
            onAnswer: (a: Answer) => {
              refused ||= !a.ok;
              io.out(`${a.ok ? "" : "refused: "}${a.message}`);
            },
          }
        : {}),
    });
    view.stop();
    if (stop.signal.aborted) {
      io.err("\ninterrupted; run the same command again to resume");
      return EXIT.interrupted;
    }
    if (result.afterCleaned)
      io.out(
        `note: run ${result.afterCleaned} had finished and was cleaned, so this is a new run, ${result.state.runKey}`,
      );
    for (const line of result.drift) io.out(`drift: ${line}`);
    io.out(runReport(result.state, repo, graph, { scripted: options.scriptedModel }));
    if (result.cleanedWorktrees !== null) io.out(cleanedLine(file, repo));
    return refused ? EXIT.failed : exitOf(result.state);
  } finally {
    process.removeListener("SIGINT", interrupt);
    process.removeListener("SIGTERM", interrupt);
    process.removeListener("SIGHUP", interrupt);
    await server?.close();
  }
}
