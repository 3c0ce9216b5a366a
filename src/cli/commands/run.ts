import { existsSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { checkTiers, loadCredentials, selectAnthropic } from "../../local/credentials.ts";
import { demoAgent } from "../../scripted/demo-agent.ts";
import { runLocal } from "../../local/run.ts";
import { startScriptedModel } from "../../scripted/model-server.ts";
import type { RunState } from "../../engine/types.ts";
import { parseGraph } from "../../graph/load.ts";
import { loadYaml } from "../../graph/yaml.ts";
import { paramErrors } from "./render.ts";
import { integrationBranch, taskBranch } from "../../graph/model.ts";
import type { Io } from "../io.ts";

export interface RunCommandOptions {
  repo: string;
  scriptedModel: boolean;
  claude?: string | undefined;
  maxTurns?: number | undefined;
  verbose: boolean;
  credentials?: string | undefined;
  anthropicCredential?: string | undefined;
  params?: Record<string, unknown>;
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

const clock = (ms: number) =>
  `${Math.floor(ms / 60_000)}:${String(Math.floor(ms / 1000) % 60).padStart(2, "0")}`;

/** One line per task with its status and elapsed time; redrawn in place on a terminal. */
class Progress {
  private lastStatus = new Map<string, string>();
  private drawn = 0;
  private state: RunState | null = null;
  private readonly timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly io: Io,
    private readonly live: boolean,
  ) {
    if (live) this.timer = setInterval(() => this.draw(), 500);
  }

  update(state: RunState): void {
    this.state = state;
    if (this.live) return this.draw();
    for (const [id, t] of Object.entries(state.tasks)) {
      const status = `${t.status}${t.attempt > 1 ? ` (attempt ${t.attempt})` : ""}`;
      if (this.lastStatus.get(id) !== status) {
        this.lastStatus.set(id, status);
        this.io.out(
          `${clock(Date.now() - state.startedAt).padStart(6)}  ${id.padEnd(24)} ${status}${t.reason && t.status !== "running" ? `: ${t.reason}` : ""}`,
        );
      }
    }
  }

  private lines(): string[] {
    const state = this.state!;
    return Object.entries(state.tasks).map(([id, t]) => {
      const attempt = t.attempts[t.attempt - 1];
      const since = attempt?.dispatchedAt ?? state.startedAt;
      const end = t.mergedAt ?? (t.status === "running" || t.status === "pr_open" ? Date.now() : since);
      const elapsed = t.attempt > 0 ? clock(end - since) : "";
      return `  ${id.padEnd(24)} ${t.status.padEnd(10)} ${t.attempt > 0 ? `attempt ${t.attempt}` : "".padEnd(9)}  ${elapsed}`;
    });
  }

  private draw(): void {
    if (!this.state) return;
    const lines = this.lines();
    const up = this.drawn > 0 ? `\u001b[${this.drawn}A` : "";
    process.stdout.write(`${up}${lines.map((l) => `\u001b[2K${l}`).join("\n")}\n`);
    this.drawn = lines.length;
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    if (this.live) this.draw();
  }
}

function report(
  state: RunState,
  repo: string,
  graphName: string,
  workstreams: { id: string; mergeTargetBranch: string }[],
): string {
  const lines = [
    "",
    `Run ${state.runKey}: ${state.outcome ?? "waiting: merge the open integration branches into their targets (git merge), then run again"}`,
    "",
  ];
  let cost = 0;
  for (const [id, t] of Object.entries(state.tasks)) {
    const spent = t.attempts.reduce((sum, a) => sum + (a.costUsd ?? 0), 0);
    cost += spent;
    lines.push(
      `  ${id.padEnd(24)} ${t.status.padEnd(10)} attempts ${t.attempt}  $${spent.toFixed(4)}${t.reason ? `  (${t.reason})` : ""}`,
    );
    for (const c of t.concerns) lines.push(`      design concern: ${c}`);
    for (const c of t.opsConcerns) lines.push(`      ops concern: ${c}`);
  }
  lines.push("", "Workstreams:");
  for (const ws of workstreams) {
    const w = state.workstreams[ws.id]!;
    const where =
      w.status === "merged" && w.integration === "merged"
        ? `merged into ${ws.mergeTargetBranch}`
        : `${integrationBranch(graphName, ws.id)}`;
    lines.push(`  ${ws.id.padEnd(24)} ${w.status.padEnd(10)} ${where}`);
  }
  lines.push(
    "",
    `Cost: $${cost.toFixed(4)}`,
    `Work: task branches ${taskBranch(graphName, "<task>")} in ${repo}`,
  );
  lines.push(`State: git log -p refs/agentrelay/runs/${state.runKey} (in ${repo})`);
  return lines.join("\n");
}

/** `agentrelay run FILE --repo DIR [--scripted-model]`. */
export async function runCommand(file: string, options: RunCommandOptions, io: Io): Promise<number> {
  const graphText = readFileSync(file, "utf8");
  const graph = parseGraph(file, graphText);
  const repo = resolve(options.repo);
  // A cyberian workflow's params: <workflow>.params.yaml beside the file, then --param values.
  const paramsFile = file.replace(/\.ya?ml$/i, ".params.yaml");
  const params = {
    ...(existsSync(paramsFile)
      ? (loadYaml(paramsFile, readFileSync(paramsFile, "utf8")).value as Record<string, unknown>)
      : {}),
    ...options.params,
  };
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
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
      }
    : {};
  const progress = new Progress(io, Boolean(process.stdout.isTTY) && !options.verbose);
  // Interrupted, the run stops its attempts (their agents with them) and ends; the next run resumes.
  const stop = new AbortController();
  const interrupt = () => stop.abort();
  process.once("SIGINT", interrupt);
  process.once("SIGTERM", interrupt);
  try {
    const result = await runLocal({
      graph,
      graphText,
      repo,
      entry: join(packageRoot(), "bin/agentrelay.js"),
      claudeBin: claudeBinary(options.claude),
      claudeEnv,
      params,
      ...(credentials ? { credentials: { anthropic, tokenTiers: credentials.tokenTiers } } : {}),
      ...(options.maxTurns ? { maxTurns: options.maxTurns } : {}),
      onState: (state) => progress.update(state),
      onLog: (task, line) => {
        if (options.verbose) io.out(`${task ? `[${task}] ` : ""}${line}`);
      },
      signal: stop.signal,
    });
    progress.stop();
    if (stop.signal.aborted) {
      io.err("\ninterrupted; run the same command again to resume");
      return 130;
    }
    for (const line of result.drift) io.out(`drift: ${line}`);
    io.out(report(result.state, repo, graph.name, graph.workstreams));
    return result.state.outcome === "succeeded" ? 0 : 1;
  } finally {
    process.removeListener("SIGINT", interrupt);
    process.removeListener("SIGTERM", interrupt);
    await server?.close();
  }
}
