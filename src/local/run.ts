/**
 * Local mode: runs a graph against a local git repository with the same engine. State lives on a
 * local git ref (compare-and-swap), integration and task branches live in the repository, each attempt
 * runs the in-job runner as a child process in its own worktree (in parallel up to max_concurrency),
 * a task "PR" is a merge commit into the integration branch, and integration merges into the target
 * when the engine says so. Interrupting and running again resumes.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { appendFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import type { AttemptSpec } from "../attempt/attempt-process.ts";
import { DEFAULT_ALLOWED_TOOLS } from "../attempt/run-attempt.ts";
import { createEngine, type Engine } from "../engine/engine.ts";
import { resumeRun } from "../engine/resume.ts";
import { record, startRun } from "../engine/store.ts";
import type { EngineEffect, EngineEvent, RunState } from "../engine/types.ts";
import type { Graph } from "../graph/model.ts";
import { integrationBranch, taskBranch } from "../graph/model.ts";
import { handoff } from "../attempt/handoff.ts";
import { attemptResultSchema, eventsOfReport } from "../protocol/report.ts";
import { commitsAhead, laneCheckout, mergeBranch, prepareIntegration } from "./branches.ts";
import { git, gitRaw } from "../attempt/git.ts";
import { anthropicEnvironment, type AnthropicCredential } from "./credentials.ts";
import { GitRefStateStore } from "./git-store.ts";

export interface LocalRunOptions {
  graph: Graph;
  graphText: string;
  repo: string;
  /** The `agentrelay` entry that runs attempts (`attempt SPEC`) and the in-job commands. */
  entry: string;
  claudeBin: string;
  /** Environment for Claude Code (ANTHROPIC_BASE_URL for a scripted model, say). */
  claudeEnv: Record<string, string>;
  /** From a credentials file: the Anthropic credential and each token tier's variables. */
  credentials?: {
    anthropic: AnthropicCredential | null;
    tokenTiers: Record<string, Record<string, string>> | null;
  };
  maxTurns?: number;
  attemptTimeoutMs?: number;
  gateTimeoutMs?: number;
  /** Values for a cyberian workflow's params. */
  params?: Record<string, unknown>;
  /** Called whenever the run's state changes. */
  onState?: (state: RunState) => void;
  /** Lines from attempts and from the runner. */
  onLog?: (task: string | null, line: string) => void;
}

export interface LocalRunResult {
  state: RunState;
  /** What changed since an earlier run of the same graph. */
  drift: string[];
  workRoot: string;
}

export async function runLocal(options: LocalRunOptions): Promise<LocalRunResult> {
  const repo = resolve(options.repo);
  const { graph } = options;
  const engine: Engine = createEngine(graph, {
    attemptTimeoutMs: options.attemptTimeoutMs ?? 60 * 60_000,
    timelineLimit: 2000,
  });
  const store = new GitRefStateStore(repo);
  // Worktrees and work directories live in <repo>/.agentrelay/<graph>/, excluded from git. (Not under
  // .git/: Claude Code protects .git directories and would not write there.)
  const gitDir = resolve(repo, await git(repo, ["rev-parse", "--git-common-dir"]));
  const workRoot = join(repo, ".agentrelay", graph.name);
  mkdirSync(workRoot, { recursive: true });
  const exclude = join(gitDir, "info", "exclude");
  mkdirSync(dirname(exclude), { recursive: true });
  if (!(existsSync(exclude) ? readFileSync(exclude, "utf8") : "").split("\n").includes("/.agentrelay/")) {
    appendFileSync(exclude, "\n/.agentrelay/\n");
  }
  const log = (task: string | null, line: string) => options.onLog?.(task, line);
  const agentHome = join(workRoot, "home");
  mkdirSync(agentHome, { recursive: true });
  const credentialEnv = anthropicEnvironment(options.credentials?.anthropic ?? null, agentHome);
  const now = () => Date.now();

  const runKey = `${graph.name}/1`;
  // Every event goes through one queue, so the runner's own writes never race each other.
  let chain: Promise<unknown> = Promise.resolve();
  const running = new Map<string, ChildProcess>();
  const inFlight = new Set<Promise<void>>();
  let state: RunState;
  let drift: string[] = [];
  let prNumber = 0;

  const apply = (event: EngineEvent): Promise<void> => {
    const next = chain.then(async () => {
      const decision = await record(store, engine, runKey, event);
      state = decision.state;
      options.onState?.(state);
      for (const effect of decision.effects) track(execute(effect));
    });
    chain = next.catch(() => undefined);
    return next;
  };
  const track = (work: Promise<void>) => {
    const tracked = work
      .catch((error) => log(null, `error: ${(error as Error).message}`))
      .finally(() => inFlight.delete(tracked));
    inFlight.add(tracked);
  };

  const execute = async (effect: EngineEffect): Promise<void> => {
    const at = now();
    switch (effect.type) {
      case "prepare_workstream": {
        const ws = engine.plan.workstreams.get(effect.workstream)!;
        try {
          await prepareIntegration(repo, integrationBranch(graph.name, ws.id), ws.baseBranch);
          return apply({ type: "workstream_prepared", workstream: ws.id, at });
        } catch (error) {
          return apply({
            type: "workstream_prepare_failed",
            workstream: ws.id,
            reason: (error as Error).message,
            at,
          });
        }
      }
      case "dispatch":
        return runTask(effect.task, effect.attempt);
      case "cancel_attempt":
        running.get(`${effect.task}/${effect.attempt}`)?.kill("SIGTERM");
        return;
      case "open_task_pr":
        return apply({
          type: "task_pr_opened",
          task: effect.task,
          pr: { number: ++prNumber, url: `local:${taskBranch(graph.name, effect.task)}` },
          at,
        });
      case "merge_task_pr": {
        const task = engine.plan.tasks.get(effect.task)!;
        const merged = await mergeBranch(
          repo,
          taskBranch(graph.name, task.id),
          integrationBranch(graph.name, task.workstreamId),
          `Merge task ${task.id} into ${task.workstreamId}`,
        );
        return apply(
          merged.ok
            ? { type: "task_pr_merged", task: task.id, pr: effect.pr, at }
            : { type: "task_merge_failed", task: task.id, reason: merged.reason, at },
        );
      }
      case "open_integration_pr": {
        const ws = engine.plan.workstreams.get(effect.workstream)!;
        const ahead = await commitsAhead(repo, integrationBranch(graph.name, ws.id), ws.mergeTargetBranch);
        if (ahead === 0) return apply({ type: "integration_skipped", workstream: ws.id, at });
        return apply({
          type: "integration_pr_opened",
          workstream: ws.id,
          pr: { number: ++prNumber, url: `local:${integrationBranch(graph.name, ws.id)}` },
          at,
        });
      }
      case "merge_integration_pr": {
        const ws = engine.plan.workstreams.get(effect.workstream)!;
        const merged = await mergeBranch(
          repo,
          integrationBranch(graph.name, ws.id),
          ws.mergeTargetBranch,
          `Integrate workstream ${ws.id}`,
        );
        return apply(
          merged.ok
            ? { type: "integration_pr_merged", workstream: ws.id, at }
            : { type: "integration_merge_failed", workstream: ws.id, reason: merged.reason, at },
        );
      }
      case "reply":
        return log(null, effect.message);
      default:
        return;
    }
  };

  const runTask = async (taskId: string, attempt: number): Promise<void> => {
    const task = engine.plan.tasks.get(taskId)!;
    const integration = integrationBranch(graph.name, task.workstreamId);
    const taskDir = join(workRoot, "tasks", taskId);
    const checkout = join(workRoot, "workstreams", task.workstreamId);
    await laneCheckout(repo, checkout, taskBranch(graph.name, taskId), integration);
    // cyberian's agent_lifecycle `reuse`: each step continues the workstream's previous session.
    const sessionFile = join(workRoot, "workstreams", `${task.workstreamId}.session`);
    const reuse = graph.cyberian?.agentLifecycle === "reuse" && existsSync(sessionFile);
    const { inputFiles, peers } = handoff(state, task);
    const spec: AttemptSpec = {
      graphFile: graph.file,
      graphText: options.graphText,
      task: taskId,
      attempt,
      repoDir: checkout,
      baseRef: integration,
      workDir: join(taskDir, "work"),
      inputFiles,
      peers,
      ...(options.params ? { params: options.params } : {}),
      ...(reuse ? { resumeSession: readFileSync(sessionFile, "utf8").trim() } : {}),
      claude: {
        bin: options.claudeBin,
        env: {
          HOME: agentHome,
          DISABLE_AUTOUPDATER: "1",
          DISABLE_TELEMETRY: "1",
          ...options.claudeEnv,
          ...credentialEnv,
          // The task's token tier: its variables, from the credentials file.
          ...(options.credentials?.tokenTiers?.[task.primaryAgent.isolation.tokenTier] ?? {}),
        },
        maxTurns: options.maxTurns ?? 60,
        timeoutMs: options.attemptTimeoutMs ?? 60 * 60_000,
        allowedTools: DEFAULT_ALLOWED_TOOLS,
      },
      gateTimeoutMs: options.gateTimeoutMs ?? 600_000,
      signalEntry: options.entry,
      resultFile: join(taskDir, `result-${attempt}.json`),
    };
    mkdirSync(join(taskDir, "work"), { recursive: true });
    const specFile = join(taskDir, `attempt-${attempt}.json`);
    writeFileSync(specFile, JSON.stringify(spec, null, 2));
    await apply({ type: "job_started", task: taskId, attempt, at: now() });
    const code = await new Promise<number | null>((done) => {
      const child = spawn(process.execPath, [options.entry, "attempt", specFile], {
        stdio: ["ignore", "pipe", "pipe"],
      });
      running.set(`${taskId}/${attempt}`, child);
      const agentLog: string[] = [];
      const onData = (chunk: Buffer) => {
        for (const line of chunk.toString("utf8").split("\n").filter(Boolean)) {
          agentLog.push(line);
          log(taskId, line);
        }
      };
      child.stdout.on("data", onData);
      child.stderr.on("data", onData);
      child.on("close", (exit) => {
        running.delete(`${taskId}/${attempt}`);
        writeFileSync(
          join(taskDir, "work", "attempts", String(attempt), "agent.log"),
          `${agentLog.join("\n")}\n`,
          { flag: "w" },
        );
        done(exit);
      });
    });
    const written = readResult(spec.resultFile);
    if (!written) {
      return apply({
        type: "job_failed",
        task: taskId,
        attempt,
        reason: `the attempt process exited with code ${code} without a result`,
        at: now(),
      });
    }
    if (written.sessionId) writeFileSync(sessionFile, `${written.sessionId}\n`);
    for (const event of eventsOfReport({ task: taskId, attempt, result: written.result }, now()))
      await apply(event);
  };

  // Start, or resume what an earlier invocation left.
  const existing = await store.load(runKey);
  if (!existing) {
    const started = await startRun(store, engine, now());
    state = started.state;
    options.onState?.(state);
    for (const effect of started.effects) track(execute(effect));
  } else {
    const resumed = resumeRun(engine, graph, existing.state, now());
    drift = resumed.drift;
    state = resumed.state;
    if (resumed.state !== existing.state) {
      const version = await store.compareAndSwap(runKey, existing.version, resumed.state);
      if (version === null) throw new Error("the run's state changed while resuming; try again");
    }
    options.onState?.(state);
    for (const effect of resumed.effects) track(execute(effect));
    // Effects whose answers the last invocation did not see (merges, integration PRs) run again.
    for (const effect of engine.pendingEffects(state)) track(execute(effect));
    // An integration "PR" left open is merged by a person merging the integration branch into its
    // target (git merge); the next invocation notices and goes on.
    for (const [laneId, lane] of Object.entries(state.workstreams)) {
      if (lane.status !== "pr_open") continue;
      const ws = engine.plan.workstreams.get(laneId)!;
      const merged = await gitRaw(repo, [
        "merge-base",
        "--is-ancestor",
        integrationBranch(graph.name, laneId),
        ws.mergeTargetBranch,
      ]);
      if (merged.code === 0) track(apply({ type: "integration_pr_merged", workstream: laneId, at: now() }));
    }
    // Attempts that were running when the last invocation stopped have no process any more.
    for (const [id, t] of Object.entries(existing.state.tasks)) {
      if (t.status === "running") {
        track(
          apply({
            type: "job_lost",
            task: id,
            attempt: t.attempt,
            reason: "the runner was interrupted",
            at: now(),
          }),
        );
      }
    }
  }

  while (inFlight.size > 0) await Promise.race(inFlight);
  await chain;
  return { state: state!, drift, workRoot };
}

/** The attempt process's result file, read with the report's schema (null when missing or malformed). */
function readResult(file: string) {
  let json: { sessionId?: unknown };
  try {
    json = JSON.parse(readFileSync(file, "utf8")) as { sessionId?: unknown };
  } catch {
    return null;
  }
  const parsed = attemptResultSchema.safeParse(json);
  if (!parsed.success) return null;
  return { result: parsed.data, sessionId: typeof json.sessionId === "string" ? json.sessionId : null };
}
