/**
 * A local repository as the driver's host: the run's state on a git ref, integration and task
 * branches in the repository, a task "PR" a merge commit into the integration branch, and each
 * attempt the in-job runner as a child process in its workstream's worktree. Branches, "PRs" and
 * merges are carried out before the write (repeating them changes nothing); attempts start after it.
 */
import { processLine } from "../attempt/bounded.ts";
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import type { AttemptSpec } from "../attempt/attempt-spec.ts";
import type { ResolverSnapshot } from "../attempt/egress/resolver.ts";
import { killGroup } from "../attempt/bounded.ts";
import { git, gitRaw } from "../attempt/git.ts";
import { handoff } from "../attempt/handoff.ts";
import { isSecretName } from "../attempt/redact.ts";
import { secretsApart } from "../attempt/attempt-spec.ts";
import { DEFAULT_ALLOWED_TOOLS } from "../attempt/attempt.ts";
import type { LoadedRun, RunHost } from "../engine/driver.ts";
import type { Engine } from "../engine/engine.ts";
import type { EngineEffect, EngineEvent, RunState } from "../engine/types.ts";
import { integrationBranch, taskBranch } from "../graph/model.ts";
import { resolverOf, subjectOf } from "../plan/resolution.ts";
import { eventsOfReport } from "../protocol/report.ts";
import { readResult } from "./attempt-result.ts";
import { intentsOf, resolutionFinishedOf, resolutionInput } from "../protocol/resolution.ts";
import {
  commitsAhead,
  deleteBranch,
  mergeBranch,
  prepareIntegration,
  workstreamCheckout,
} from "./branches.ts";
import type { GitRefStateStore } from "./git-store.ts";
import { localTaskPr } from "./merge-record.ts";
import { processGroupsFile, stopRecordedIn, stopRecordedProcesses } from "./run-lock.ts";

/** What an attempt process needs besides the run: the agent, its environment and its limits. */
export interface AttemptSettings {
  /** The `agentrelay` entry that runs attempts (`attempt SPEC`) and the in-job commands. */
  entry: string;
  graphText: string;
  claudeBin: string;
  /** The agent's environment for a task (its token tier's variables included). */
  claudeEnv: (tokenTier: string) => NodeJS.ProcessEnv;
  maxTurns: number;
  attemptTimeoutMs: number;
  gateTimeoutMs: number;
  params?: Record<string, unknown>;
  /** What fixes a credential the model API refuses, in the user's terms (credentials.ts). */
  fixCredential?: string;
  /** How the attempts' egress proxies resolve names: read before any agent existed (egress/resolver.ts). */
  resolver?: ResolverSnapshot;
}

/** Where everything an attempt printed is kept: `agent.log` in its work directory. */
const agentLogOf = (workDir: string, attempt: number) =>
  join(workDir, "attempts", String(attempt), "agent.log");

/** A path as the user would type it from here: relative when under the current directory. */
const shown = (path: string) => {
  const near = relative(process.cwd(), path);
  return near === "" ? "." : near.startsWith("..") ? path : near;
};

export class LocalHost implements RunHost {
  private readonly running = new Map<string, ChildProcess>();
  /** Set when the runner is interrupted: attempts it stops are not reported (the next run resumes them). */
  private stopping = false;
  /** Who hears the answer to the command being applied (set by the runner around that drive). */
  onAnswer: ((answer: { ok: boolean; message: string }) => void) | undefined;

  constructor(
    private readonly repo: string,
    private readonly workRoot: string,
    private readonly store: GitRefStateStore,
    private readonly engine: Engine,
    private readonly settings: AttemptSettings,
    /** Starts work that outlives the write (an attempt): the run waits for it before it ends. */
    private readonly track: (work: Promise<void>) => void,
    /** Applies facts an attempt reports, later, through the runner's driver. */
    private readonly report: (facts: EngineEvent[]) => Promise<void>,
    readonly log: (message: string, task?: string) => void,
    /** The clones of the other repositories the graph names, by its name for each (`--repo NAME=PATH`). */
    private readonly elsewhere: Readonly<Record<string, string>> = {},
  ) {}

  private get graph() {
    return this.engine.plan.graph;
  }

  /** The clone a workstream lives in: the graph's own, or the one its repository maps to. */
  repoOf(workstream: string): string {
    const name = this.engine.plan.workstreams.get(workstream)?.repository;
    return name === undefined ? this.repo : this.elsewhere[name]!;
  }

  async load(run: string): Promise<LoadedRun | null> {
    const stored = await this.store.load(run);
    return stored ? { ...stored, engine: this.engine } : null;
  }

  compareAndSwap(
    run: string,
    expected: string | null,
    state: RunState,
    touched?: ReadonlySet<string>,
  ): Promise<string | null> {
    return this.store.compareAndSwap(run, expected, state, touched);
  }

  /** An integration "PR" is the branch itself, numbered after the tasks' (localTaskPr) by the plan. */
  private integrationPrNumber(workstream: string): number {
    const { plan } = this.engine;
    return plan.order.length + plan.graph.workstreams.findIndex((w) => w.id === workstream) + 1;
  }

  async repeatable(effect: EngineEffect): Promise<EngineEvent[]> {
    const at = Date.now();
    const { plan } = this.engine;
    const name = this.graph.name;
    switch (effect.type) {
      case "prepare_workstream": {
        const ws = plan.workstreams.get(effect.workstream)!;
        try {
          await prepareIntegration(this.repoOf(ws.id), integrationBranch(name, ws.id), ws.baseBranch);
          return [{ type: "workstream_prepared", workstream: ws.id, at }];
        } catch (error) {
          const reason = (error as Error).message;
          return [{ type: "workstream_prepare_failed", workstream: ws.id, reason, at }];
        }
      }
      case "open_task_pr": {
        const pr = localTaskPr(plan, name, effect.task);
        return [{ type: "task_pr_opened", task: effect.task, pr, at }];
      }
      case "merge_task_pr": {
        const task = plan.tasks.get(effect.task)!;
        const merged = await mergeBranch(
          this.repoOf(task.workstreamId),
          taskBranch(name, task.id),
          integrationBranch(name, task.workstreamId),
          `Merge task ${task.id} into ${task.workstreamId}`,
        );
        if (merged.ok) return [{ type: "task_pr_merged", task: task.id, pr: effect.pr, at }];
        if (!merged.conflicts)
          return [{ type: "task_merge_failed", task: task.id, reason: merged.reason, at }];
        const { resolutions } = effect;
        return [
          {
            type: "task_conflicted",
            task: task.id,
            files: merged.conflicts,
            ...(resolutions !== undefined ? { resolutions } : {}),
            at,
          },
        ];
      }
      case "open_integration_pr": {
        const ws = plan.workstreams.get(effect.workstream)!;
        const branch = integrationBranch(name, ws.id);
        const repo = this.repoOf(ws.id);
        if ((await commitsAhead(repo, branch, ws.mergeTargetBranch)) === 0)
          return [{ type: "integration_skipped", workstream: ws.id, at }];
        // Up to date with its target before it is offered, by a merge (no agent); a conflict is left
        // for the integration merge, which starts a resolution.
        await mergeBranch(repo, ws.mergeTargetBranch, branch, `Merge ${ws.mergeTargetBranch} into ${branch}`);
        const pr = { number: this.integrationPrNumber(ws.id), url: `local:${branch}` };
        return [{ type: "integration_pr_opened", workstream: ws.id, pr, at }];
      }
      case "merge_integration_pr": {
        const ws = plan.workstreams.get(effect.workstream)!;
        const moved = effect.verified && (await this.movedSince(ws.id, effect.verified));
        if (moved) return [{ type: "integration_unverified", workstream: ws.id, reason: moved, at }];
        const merged = await this.mergeIntegration(ws.id, effect.verified);
        if (merged.ok) return [{ type: "integration_pr_merged", workstream: ws.id, at, commit: merged.sha }];
        if (merged.conflicts) {
          const { resolutions } = effect;
          const files = merged.conflicts;
          return [
            {
              type: "integration_conflicted",
              workstream: ws.id,
              files,
              ...(resolutions !== undefined ? { resolutions } : {}),
              at,
            },
          ];
        }
        return [{ type: "integration_merge_failed", workstream: ws.id, reason: merged.reason, at }];
      }
      default:
        return [];
    }
  }

  async afterWrite(effects: EngineEffect[], state: RunState): Promise<EngineEvent[]> {
    for (const effect of effects) {
      switch (effect.type) {
        case "dispatch":
          // The runner's own failure (its checkout, its process) fails the attempt, with the reason:
          // left running, the run would end "not finished" and the cause be hidden.
          this.track(
            this.runAttempt(state, effect.task, effect.attempt).catch(async (error: Error) => {
              const reason = `the runner could not run attempt ${effect.attempt}: ${error.message.split("\n")[0]}`;
              const at = Date.now();
              if (!this.stopping)
                await this.report([
                  { type: "job_failed", task: effect.task, attempt: effect.attempt, reason, at },
                ]);
              throw error;
            }),
          );
          break;
        case "resolve_conflicts":
        case "verify_integration":
        case "repair_integration":
          this.track(this.runResolution(state, effect));
          break;
        case "cancel_attempt":
        case "cancel_resolution": {
          const key =
            effect.type === "cancel_attempt"
              ? `${effect.task}/${effect.attempt}`
              : `${resolutionInput(subjectOf(effect))}/${effect.n}`;
          const child = this.running.get(key);
          if (child) killGroup(child, "SIGTERM");
          break;
        }
        case "reset_task":
          // The next attempt starts afresh from the integration branch.
          await deleteBranch(
            this.repoOf(this.engine.plan.tasks.get(effect.task)!.workstreamId),
            taskBranch(this.graph.name, effect.task),
          );
          break;
        case "reply":
          if (this.onAnswer) this.onAnswer({ ok: effect.ok, message: effect.message });
          else this.log(effect.message);
          break;
        default:
          break;
      }
    }
    return [];
  }

  /** Runs one attempt as a child process in the workstream's worktree and reports its result. */
  private async runAttempt(state: RunState, taskId: string, attempt: number): Promise<void> {
    const { graph } = this;
    const task = this.engine.plan.tasks.get(taskId)!;
    const integration = integrationBranch(graph.name, task.workstreamId);
    const taskDir = join(this.workRoot, "tasks", taskId);
    const checkout = join(this.workRoot, "workstreams", task.workstreamId);
    const gitDir = await workstreamCheckout(
      this.repoOf(task.workstreamId),
      checkout,
      taskBranch(graph.name, taskId),
      integration,
    );
    // cyberian's agent_lifecycle `reuse`: each step continues the workstream's previous session.
    const sessionFile = join(this.workRoot, "workstreams", `${task.workstreamId}.session`);
    const reuse = graph.cyberian?.agentLifecycle === "reuse" && existsSync(sessionFile);
    const { inputFiles, peers, landings, landedElsewhere } = handoff(state, task, this.engine.plan);
    const s = this.settings;
    const { agent, secrets } = this.agentOf(task.primaryAgent.isolation.tokenTier);
    const spec: AttemptSpec = {
      ...agent,
      task: taskId,
      attempt,
      repoDir: checkout,
      gitDir: { path: gitDir, seal: false },
      baseRef: integration,
      workDir: join(taskDir, "work"),
      inputFiles,
      peers,
      landings,
      ...(landedElsewhere.length ? { landedElsewhere } : {}),
      ...(s.params ? { params: s.params } : {}),
      ...(reuse ? { resumeSession: readFileSync(sessionFile, "utf8").trim() } : {}),
      capMicros: state.tasks[taskId]!.attempts[attempt - 1]?.capMicros ?? null,
      retryCommand: `run \`agentrelay retry ${graph.file} ${taskId} --repo ${shown(this.repo)}${Object.entries(
        this.elsewhere,
      )
        .map(([n, path]) => ` --repo ${n}=${shown(path)}`)
        .join("")}\``,
      logFile: shown(agentLogOf(join(taskDir, "work"), attempt)),
      resultFile: join(taskDir, `result-${attempt}.json`),
      processGroupsFile: processGroupsFile(taskDir, attempt),
    };
    await this.report([{ type: "job_started", task: taskId, attempt, at: Date.now() }]);
    const code = await this.spawnAttempt(spec, taskDir, `${taskId}/${attempt}`, secrets, taskId);
    if (this.stopping) return;
    const written = readResult(spec.resultFile);
    if (!written) {
      const reason = `the attempt process exited with code ${code} without a result`;
      return this.report([{ type: "job_failed", task: taskId, attempt, reason, at: Date.now() }]);
    }
    if (written.sessionId) writeFileSync(sessionFile, `${written.sessionId}\n`);
    await this.report(eventsOfReport({ task: taskId, attempt, result: written.result }, Date.now()));
  }

  /**
   * What every attempt process of a token tier gets: the graph, the agent and its limits. Secrets
   * reach the process on its stdin, never through the spec file or its environment.
   */
  private agentOf(tokenTier: string) {
    const s = this.settings;
    const claudeEnv = s.claudeEnv(tokenTier);
    const secrets = Object.fromEntries(Object.entries(claudeEnv).filter(([name]) => isSecretName(name)));
    const agent = {
      graphFile: this.graph.file,
      graphText: s.graphText,
      claude: {
        bin: s.claudeBin,
        env: Object.fromEntries(Object.entries(claudeEnv).filter(([name]) => !isSecretName(name))),
        maxTurns: s.maxTurns,
        timeoutMs: s.attemptTimeoutMs,
        allowedTools: DEFAULT_ALLOWED_TOOLS,
      },
      gateTimeoutMs: s.gateTimeoutMs,
      signalEntry: s.entry,
      // On by default: each attempt in a network namespace of its own (the report says when it cannot be).
      network: { mode: "namespace" as const, ...(s.resolver ? { resolver: s.resolver } : {}) },
      ...(s.fixCredential ? { fixCredential: s.fixCredential } : {}),
    };
    return { agent, secrets };
  }

  /**
   * Runs an attempt process with `spec` (written beside it in `dir`, secrets only on its stdin)
   * until it exits; its progress goes to the log, and to `agent.log` in its work directory.
   */
  private async spawnAttempt(
    spec: AttemptSpec,
    dir: string,
    key: string,
    secrets: NodeJS.ProcessEnv,
    logAs: string,
  ): Promise<number | null> {
    mkdirSync(spec.workDir, { recursive: true });
    const specFile = join(dir, `attempt-${spec.attempt}.json`);
    writeFileSync(specFile, JSON.stringify(spec, null, 2), { mode: 0o600 });
    return new Promise<number | null>((done) => {
      // Secrets reach the attempt process on its stdin, not in its environment, which any process of
      // the same user (the agent's, locally) can read in /proc.
      const { env, piped } = secretsApart(process.env, secrets);
      const child = spawn(process.execPath, [this.settings.entry, "attempt", specFile], {
        stdio: ["pipe", "pipe", "pipe"],
        env,
        detached: true, // its own process group: stopped whole, on cancel or after a crash
      });
      child.stdin.on("error", () => undefined); // an attempt process that died at once
      child.stdin.end(JSON.stringify(piped));
      if (child.pid !== undefined)
        writeFileSync(spec.processGroupsFile!, processLine(child.pid), { flag: "a" });
      this.running.set(key, child);
      const agentLog: string[] = [];
      const onData = (chunk: Buffer) => {
        for (const line of chunk.toString("utf8").split("\n").filter(Boolean)) {
          agentLog.push(line);
          this.log(line, logAs);
        }
      };
      child.stdout.on("data", onData);
      child.stderr.on("data", onData);
      child.on("close", (exit) => {
        this.running.delete(key);
        rmSync(specFile, { force: true });
        stopRecordedIn(spec.processGroupsFile!);
        const log = agentLogOf(spec.workDir, spec.attempt);
        mkdirSync(dirname(log), { recursive: true });
        writeFileSync(log, `${agentLog.join("\n")}\n`);
        done(exit);
      });
    });
  }

  /**
   * Runs resolution attempt `n`: the attempt process merges the target into the PR's branch (checked
   * out in the workstream's worktree) with the resolver's agent, under its token tier, and the
   * resolver's gates (plan/resolution.ts); it reports how that ended.
   */
  private async runResolution(
    state: RunState,
    effect: Extract<
      EngineEffect,
      { type: "resolve_conflicts" | "verify_integration" | "repair_integration" }
    >,
  ): Promise<void> {
    const { plan } = this.engine;
    const kind =
      effect.type === "verify_integration"
        ? "verify"
        : effect.type === "repair_integration"
          ? "repair"
          : undefined;
    const subject = subjectOf({ ...effect, kind });
    const resolver = resolverOf(plan, subject);
    const dir = join(this.workRoot, "resolutions", resolutionInput(subject));
    const checkout = join(this.workRoot, "workstreams", effect.workstream);
    const integration = integrationBranch(this.graph.name, effect.workstream);
    const gitDir = await workstreamCheckout(
      this.repoOf(effect.workstream),
      checkout,
      resolver.branch,
      integration,
    );
    const { agent, secrets } = this.agentOf(resolver.agentTask.primaryAgent.isolation.tokenTier);
    const spec: AttemptSpec = {
      ...agent,
      task: resolver.agentTask.id,
      attempt: effect.n,
      repoDir: checkout,
      gitDir: { path: gitDir, seal: false },
      baseRef: resolver.branch,
      workDir: join(dir, "work"),
      inputFiles: [],
      peers: {},
      capMicros: "capMicros" in effect ? (effect.capMicros ?? null) : null,
      resolution: {
        ...(kind ? { kind } : {}),
        ...(kind === "repair"
          ? { failure: state.workstreams[effect.workstream]?.verification?.failure ?? "" }
          : {}),
        target: resolver.target,
        intents: intentsOf(plan, subject, state.tasks, state.workstreams),
        gates: resolver.gates,
        testPaths: resolver.testPaths,
      },
      resultFile: join(dir, `result-${effect.n}.json`),
      processGroupsFile: processGroupsFile(dir, effect.n),
    };
    mkdirSync(dir, { recursive: true });
    const label = `${resolutionInput(subject)}/${effect.n}`;
    const code = await this.spawnAttempt(spec, dir, label, secrets, effect.workstream);
    if (this.stopping) return;
    const r = readResult(spec.resultFile)?.result;
    const reason = `the resolution process exited with code ${code} without a result`;
    await this.report([
      r
        ? resolutionFinishedOf(subject, effect.n, r, Date.now())
        : { type: "resolution_finished", ...subject, n: effect.n, ok: false, reason, at: Date.now() },
    ]);
  }

  /** Stops every running attempt (the runner was interrupted); the next run resumes them. */
  stop(): void {
    this.stopping = true;
    stopRecordedProcesses(this.workRoot);
  }

  /**
   * Merges the workstream's integration branch into its target; with `verified`, only if the target is
   * still the commit the branch was verified with (the merge then lands exactly the verified tree).
   */
  mergeIntegration(workstream: string, verified?: { base: string; head: string }) {
    const ws = this.engine.plan.workstreams.get(workstream)!;
    const branch = integrationBranch(this.graph.name, workstream);
    return mergeBranch(
      this.repoOf(workstream),
      branch,
      ws.mergeTargetBranch,
      `Integrate workstream ${workstream}`,
      verified,
    );
  }

  /** Why the verified tree is no longer what would land (the target or the branch moved), or null. */
  private async movedSince(
    workstream: string,
    verified: { base: string; head: string },
  ): Promise<string | null> {
    const ws = this.engine.plan.workstreams.get(workstream)!;
    const branch = integrationBranch(this.graph.name, workstream);
    const [target, head] = await Promise.all(
      [ws.mergeTargetBranch, branch].map((b) =>
        git(this.repoOf(workstream), ["rev-parse", `refs/heads/${b}`]),
      ),
    );
    if (head !== verified.head) return `${branch} moved since it was verified`;
    return target === verified.base ? null : `${ws.mergeTargetBranch} moved since ${branch} was verified`;
  }

  /** An integration "PR" left open is merged by a person merging the branch into its target. */
  async mergedByPerson(workstream: string): Promise<boolean> {
    const ws = this.engine.plan.workstreams.get(workstream)!;
    const branch = integrationBranch(this.graph.name, workstream);
    return (
      (await gitRaw(this.repoOf(workstream), ["merge-base", "--is-ancestor", branch, ws.mergeTargetBranch]))
        .code === 0
    );
  }
}
