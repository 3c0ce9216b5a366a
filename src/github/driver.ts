/**
 * Drives a run on GitHub: every handler (webhook, job report, command, reconciler) hands its facts
 * to `drive`, which loads the run, lets the engine decide, carries out the repeatable effects (PRs,
 * merges, branches) so their facts land in the same write, writes once by compare-and-swap, and only
 * then starts jobs and edits what people see. A writer that loses the race loads again and decides
 * again, so effects that must happen once (dispatches) happen once however many replicas run.
 */
import { createHash } from "node:crypto";
import { createEngine, type Engine } from "../engine/engine.ts";
import { resumeRun } from "../engine/resume.ts";
import { drive, type Driven, type LoadedRun, type Round, type RunHost, settle } from "../engine/driver.ts";
import { StateConflictError } from "../engine/store.ts";
import type { EngineEffect, EngineEvent } from "../engine/types.ts";
import type { Graph } from "../graph/model.ts";
import type { RepoContext } from "./client.ts";
import { GitHubEffects } from "./effects.ts";
import { adoptionFacts, mergeRecord, sayWentBack } from "./merge-record.ts";
import { type GitHubMeta, type HostedRun, hostedRunOf, newMeta } from "./hosted-run.ts";
import { GraphError } from "../graph/errors.ts";
import { parseRunGraph, type RunSource } from "../protocol/run-source.ts";
import { StateDamageError } from "../protocol/state-check.ts";
import { checkTaskRecords } from "../protocol/state-layout.ts";
import { editStatus, mirrorStatus, openTracking, resolutionCheckRun, taskCheckRun } from "./projections.ts";
import { GitHubStateStore } from "./state-store.ts";
import { writeBudgetOf } from "./write-pacing.ts";

/** Where a command came from, to answer it there, and the mark its answer carries (app/commands.ts). */
export interface Origin {
  issueNumber: number;
  answer?: string;
}

export interface Loaded {
  run: HostedRun;
  version: string;
  engine: Engine;
  /** From the store's cache, not read just now: a decision that changes nothing is checked afresh. */
  cached?: boolean;
}

// Parsed graphs by content: a cache of pure results, not run state (every handler still reads the store).
const engines = new Map<string, Engine>();
function engineFor(
  source: RunSource,
  runNumber: number,
  config: RepoContext["config"],
  /** Names the graph text (its blob id), so that a large graph is not hashed on every event. */
  graphKey?: string,
): Engine {
  const key = createHash("sha256")
    .update(
      `${runNumber}\0${source.path}\0${graphKey ?? source.text}\0${JSON.stringify(source.params ?? {})}`,
    )
    .digest("hex");
  let engine = engines.get(key);
  if (!engine) {
    engine = createEngine(parseRunGraph(source), {
      runNumber,
      attemptTimeoutMs: config.attemptTimeoutMs,
      timelineLimit: 200,
    });
    if (engines.size > 50) engines.delete(engines.keys().next().value!);
    engines.set(key, engine);
  }
  return engine;
}

export class RunDriver {
  readonly store: GitHubStateStore;
  readonly effects: GitHubEffects;

  constructor(readonly ctx: RepoContext) {
    this.store = new GitHubStateStore(ctx.octokit, ctx.owner, ctx.repo, ctx.config.stateCache);
    this.effects = new GitHubEffects(ctx);
  }

  /**
   * The run and the engine of the graph it follows. That graph is part of the run's state: a pinned
   * graph that no longer parses, or task records that are not its tasks (a bucket emptied), is damage
   * that names its part, never a TypeError in whatever handler reads the run next.
   */
  async load(runKey: string, options: { fresh?: boolean } = {}): Promise<Loaded | null> {
    const stored = await this.store.load(runKey, options);
    if (!stored) return null;
    const run = hostedRunOf(stored.state as HostedRun);
    let engine: Engine;
    try {
      try {
        engine = engineFor(run.source, run.runNumber, this.ctx.config, stored.graphKey);
      } catch (error) {
        if (!(error instanceof GraphError)) throw error;
        const issue = error.issues[0];
        throw new StateDamageError(
          stored.buckets > 0 ? "graph.yaml" : "the run's document",
          `is not a graph the run can follow (line ${issue?.line ?? 1}: ${issue?.message ?? error.message})`,
        );
      }
      checkTaskRecords(run, engine.plan.order, stored.buckets);
    } catch (error) {
      if (!(error instanceof StateDamageError)) throw error;
      this.store.forget(runKey);
      throw this.store.damage(error, runKey, stored.version, run.github.trackingIssue);
    }
    return { run, version: stored.version, engine, ...(stored.cached ? { cached: true } : {}) };
  }

  /** The graph's latest run number (0 when it never ran). */
  async latestRun(graph: string): Promise<number> {
    return Math.max(0, ...(await this.store.runNumbers(graph)));
  }

  /**
   * A pushed graph: starts its first run, resumes an unfinished run (drift reported), or starts the
   * next run when the previous one finished and the graph changed since.
   */
  async startOrResume(
    source: RunSource,
    graph: Graph,
  ): Promise<{ runKey: string; started: boolean; drift: string[] }> {
    // Read afresh: a push is rare, and a resume decided on a remembered state would be refused.
    const latest = await this.latestRun(graph.name);
    const previous = latest > 0 ? await this.load(`${graph.name}/${latest}`, { fresh: true }) : null;
    if (previous && !previous.run.outcome) {
      const engine = engineFor(source, latest, this.ctx.config);
      const resumed = resumeRun(engine, graph, previous.run, this.ctx.now());
      if (resumed.state === previous.run) return { runKey: previous.run.runKey, started: false, drift: [] };
      const next = { ...resumed.state, source, github: previous.run.github } as HostedRun;
      // The status is edited at once: people see the drift.
      const host = new GitHubHost(this, null, true);
      const version = await settle(host, next.runKey, previous.version, { ...resumed, state: next }, engine);
      if (version === null)
        throw new StateConflictError(`run ${next.runKey} changed while resuming; the next event resumes it`);
      if (resumed.drift.length > 0 && next.github.trackingIssue !== null) {
        await this.ctx.octokit.rest.issues.createComment({
          owner: this.ctx.owner,
          repo: this.ctx.repo,
          issue_number: next.github.trackingIssue,
          body: [
            `The graph changed at ${source.commit}; the run goes on with it:`,
            "",
            ...resumed.drift.map((d) => `- ${d}`),
          ].join("\n"),
        });
      }
      return { runKey: next.runKey, started: false, drift: resumed.drift };
    }
    const unchanged = (a: RunSource, b: RunSource) =>
      a.text === b.text && JSON.stringify(a.params ?? {}) === JSON.stringify(b.params ?? {});
    if (previous && unchanged(previous.run.source, source)) {
      return { runKey: previous.run.runKey, started: false, drift: [] }; // finished, and nothing changed since
    }
    const number = latest + 1;
    const engine = engineFor(source, number, this.ctx.config);
    const decision = engine.start(this.ctx.now());
    const run = { ...decision.state, source, github: newMeta() } as HostedRun;
    const version = await this.store.compareAndSwap(run.runKey, null, run);
    if (version === null) return { runKey: run.runKey, started: false, drift: [] }; // another replica started it
    await openTracking(this.ctx, run, engine);
    // The first decision's repeatable effects (integration branches) run through drive like any
    // other, and its write keeps the tracking issue's ids.
    await this.drive(run.runKey, [], { pending: true, loaded: { run, version, engine }, unsaved: true });
    return { runKey: run.runKey, started: true, drift: [] };
  }

  /**
   * Applies facts to the run. With `pending`, also carries out what the state says is owed (the
   * reconciler's repair: effects whose answers were lost).
   */
  async drive(
    runKey: string,
    facts: EngineEvent[],
    options: {
      pending?: boolean;
      origin?: Origin;
      refreshStatus?: boolean;
      loaded?: Loaded;
      /** The handed-over run has changes of its own to write. */
      unsaved?: boolean;
    } = {},
  ): Promise<HostedRun | null> {
    const host = new GitHubHost(this, options.origin ?? null, options.refreshStatus === true);
    const driven = await drive(host, runKey, facts, {
      ...(options.pending ? { pending: true } : {}),
      ...(options.loaded ? { loaded: toLoadedRun(options.loaded) } : {}),
      ...(options.unsaved ? { unsaved: true } : {}),
    });
    return driven?.state ?? null;
  }

  /**
   * A job's report. With `holdTask`, its runner can hold it: when the task's PR then waits only for
   * required checks GitHub is running now, and nothing else is owed, nothing is written (`held`) and
   * the runner reports again; the report, the merge and the next dispatch then land in one write.
   */
  async driveReport(
    runKey: string,
    facts: EngineEvent[],
    loaded: Loaded,
    holdTask?: string,
  ): Promise<Driven<HostedRun> | null> {
    const host = new GitHubHost(this, null, false);
    this.effects.lookBeforeOpening = holdTask !== undefined;
    const hold = (run: HostedRun, owed: readonly EngineEffect[]) => {
      const pr = run.tasks[holdTask!]?.status === "pr_open" ? run.tasks[holdTask!]!.pr : null;
      return (
        pr !== null &&
        this.effects.waitsOnRunningChecks(pr.number) &&
        owed.every((e) => e.type === "update_status")
      );
    };
    return drive(host, runKey, facts, { loaded: toLoadedRun(loaded), ...(holdTask ? { hold } : {}) });
  }

  /**
   * Applies facts and says whether this call's write landed (the token route's answer depends on it).
   * The status is left for the next event: a job starting is not worth an edit of its own.
   */
  async driveOnce(runKey: string, facts: EngineEvent[], loaded?: Loaded): Promise<Driven<HostedRun> | null> {
    const host = new GitHubHost(this, null, false, false);
    return drive(host, runKey, facts, loaded ? { loaded: toLoadedRun(loaded) } : {});
  }

  statusDue(run: HostedRun, effects: EngineEffect[]): boolean {
    if (!effects.some((e) => e.type === "update_status" || e.type === "finish_run")) return false;
    if (run.outcome !== null) return true;
    // The interval grows as the installation's write budget fills (write-pacing.ts).
    const now = this.ctx.now();
    const configured = this.ctx.config.statusIntervalMs;
    const interval = writeBudgetOf(this.ctx.octokit)?.statusInterval(configured, now) ?? configured;
    return now - run.github.statusAt >= interval;
  }
}

const toLoadedRun = (l: Loaded): LoadedRun<HostedRun> => ({
  state: l.run,
  version: l.version,
  engine: l.engine,
  ...(l.cached ? { cached: true } : {}),
});

/**
 * GitHub as the driver's host: the state branch is the store; branches, PRs and merges are carried
 * out before the write (repeating them is harmless), jobs, cancellations, resets and replies after
 * it; the ids of what people see (tracking issue, status comments, check runs) are kept in the run.
 */
class GitHubHost implements RunHost<HostedRun> {
  /** Ids of what a lost round created on GitHub, written with the next round. */
  private readonly created: Omit<GitHubMeta, "statusAt"> = {
    trackingIssue: null,
    statusComment: null,
    checkRuns: {},
    workstreamComments: {},
  };
  private statusDue = false;
  /** Resolutions whose verdict this round records: their check runs are created once it lands. */
  private resolved: Extract<EngineEvent, { type: "resolution_finished" }>[] = [];

  constructor(
    private readonly driver: RunDriver,
    private readonly origin: Origin | null,
    private refreshStatus: boolean,
    /** Whether this host edits the status comments when they are due. */
    private readonly editsStatus = true,
  ) {}

  private get ctx(): RepoContext {
    return this.driver.ctx;
  }

  async load(run: string, options: { fresh: boolean }): Promise<LoadedRun<HostedRun> | null> {
    const loaded = await this.driver.load(run, options);
    return loaded ? toLoadedRun(loaded) : null;
  }

  async compareAndSwap(
    run: string,
    expected: string | null,
    state: HostedRun,
    touched?: ReadonlySet<string>,
  ): Promise<string | null> {
    const written = await this.driver.store.compareAndSwap(run, expected, state, touched);
    if (written === null) {
      // What this round created stays created: the next round writes its ids.
      this.created.trackingIssue = state.github.trackingIssue;
      this.created.statusComment = state.github.statusComment;
      Object.assign(this.created.checkRuns, state.github.checkRuns);
      Object.assign(this.created.workstreamComments, state.github.workstreamComments);
    }
    return written;
  }

  release(run: string, state: HostedRun): void {
    this.driver.store.release(run, state);
  }

  repeatable(effect: EngineEffect, run: HostedRun, engine: Engine): Promise<EngineEvent[]> {
    return this.driver.effects.repeatable(effect, run, engine);
  }

  async beforeSave(run: HostedRun, engine: Engine, round: Round): Promise<boolean> {
    const { github } = run;
    // What changes here is compared as it goes: the run's check-run ids grow with its tasks.
    const before = JSON.stringify({ ...github, checkRuns: undefined });
    const checkRuns = new Map(Object.entries(github.checkRuns));
    github.trackingIssue ??= this.created.trackingIssue;
    github.statusComment ??= this.created.statusComment;
    for (const [task, id] of Object.entries(this.created.checkRuns)) github.checkRuns[task] ??= id;
    github.workstreamComments = { ...this.created.workstreamComments, ...github.workstreamComments };
    const verdicts = new Map<string, number>();
    for (const fact of round.changed)
      if (fact.type === "job_succeeded" || fact.type === "job_failed" || fact.type === "job_lost")
        verdicts.set(fact.task, fact.attempt);
    for (const [task, attempt] of verdicts) await taskCheckRun(this.ctx, run, task, attempt, engine.plan);
    for (const task of this.keepWaits(run))
      await taskCheckRun(
        this.ctx,
        run,
        task,
        run.tasks[task]!.attempt,
        engine.plan,
        github.waits![`task:${task}`]!.line,
      );
    this.resolved = round.changed.filter((fact) => fact.type === "resolution_finished");
    await mirrorStatus(this.ctx, run, engine);
    this.statusDue = this.refreshStatus || (this.editsStatus && this.driver.statusDue(run, round.effects));
    if (this.statusDue) github.statusAt = this.ctx.now();
    let changed = JSON.stringify({ ...github, checkRuns: undefined }) !== before;
    for (const [task, id] of Object.entries(github.checkRuns)) {
      if (checkRuns.get(task) === id) continue;
      round.touched.add(task); // its record's bucket holds the check run's id
      changed = true;
    }
    return changed;
  }

  /**
   * Keeps with the run what GitHub makes it wait for (the effects' waits), as long as what waits is
   * still open; the tasks whose wait only a person can end and which is new: their check runs say it.
   */
  private keepWaits(run: HostedRun): string[] {
    const waits = { ...(run.github.waits ?? {}) };
    const told: string[] = [];
    for (const [key, wait] of this.driver.effects.waits.get(run.runKey) ?? []) {
      if (wait === null) delete waits[key];
      else {
        if (wait.person && waits[key]?.line !== wait.line && key.startsWith("task:")) told.push(key.slice(5));
        waits[key] = wait;
      }
    }
    for (const key of Object.keys(waits)) {
      const [kind, id] = [key.slice(0, key.indexOf(":")), key.slice(key.indexOf(":") + 1)];
      const ws = run.workstreams[id];
      // A repository the installation lost, or whose task workflow is too old, stays said until an
      // effect there reaches it again (or a dispatch there is taken).
      const open =
        kind === "repository" ||
        kind === "workflow" ||
        (kind === "task"
          ? run.tasks[id]?.status === "pr_open"
          : ws?.status === "pr_open" || ws?.integration === "opening");
      if (!open) delete waits[key];
    }
    if (Object.keys(waits).length > 0) run.github.waits = waits;
    else delete run.github.waits;
    return told.filter((task) => run.github.waits?.[`task:${task}`]);
  }

  /**
   * Whether this handler's effects found a repository's wait begin or end (lost, or its task workflow
   * too old) that the run does not say yet (those waits stay open until it ends: keepWaits).
   */
  private waitsChanged(run: HostedRun): boolean {
    const said = run.github.waits ?? {};
    for (const [key, wait] of this.driver.effects.waits.get(run.runKey) ?? []) {
      if (!key.startsWith("repository:") && !key.startsWith("workflow:")) continue;
      if (wait?.line !== said[key]?.line) return true;
    }
    return false;
  }

  async afterWrite(
    effects: EngineEffect[],
    run: HostedRun,
    engine: Engine,
    version: string,
  ): Promise<EngineEvent[]> {
    const facts: EngineEvent[] = [];
    const { effects: github, ctx } = this.driver;
    // Never a task whose PR GitHub merged already (the state went back): it is taken as merged.
    const dispatches = effects.flatMap((e) =>
      e.type === "dispatch" &&
      run.tasks[e.task]?.attempt === e.attempt &&
      run.tasks[e.task]?.status === "running"
        ? [e.task]
        : [],
    );
    const record = dispatches.length > 0 ? await mergeRecord(ctx, run, engine.plan, dispatches) : null;
    const merged = record?.tasks ?? new Map<string, unknown>();
    if (record && merged.size > 0) {
      facts.push(...adoptionFacts(record, ctx.now()));
      await sayWentBack(ctx, run, record);
    }
    for (const effect of effects) {
      switch (effect.type) {
        case "dispatch":
          // A dispatch a later fact of its round made stale (the task is no longer running it) starts nothing.
          if (!dispatches.includes(effect.task) || merged.has(effect.task)) break;
          facts.push(
            ...(await github.at(engine, effect).dispatch(run, engine, effect.task, effect.attempt, version)),
          );
          break;
        case "resolve_conflicts":
        case "verify_integration":
        case "repair_integration":
          facts.push(...(await github.at(engine, effect).dispatchResolution(run, engine, effect, version)));
          break;
        case "cancel_attempt":
          await github.at(engine, effect).cancel(run, effect.task, effect.attempt);
          break;
        case "cancel_resolution":
          await github.at(engine, effect).cancelResolution(run, effect);
          break;
        case "reset_task":
          await github.at(engine, effect).reset(run, effect.task, effect.pr);
          break;
        case "reply":
          if (this.origin)
            await ctx.octokit.rest.issues.createComment({
              owner: ctx.owner,
              repo: ctx.repo,
              issue_number: this.origin.issueNumber,
              body: this.origin.answer ? `${this.origin.answer}\n${effect.message}` : effect.message,
            });
          break;
        default:
          break;
      }
    }
    for (const fact of this.resolved.splice(0)) await resolutionCheckRun(ctx, run, engine, fact);
    if (this.waitsChanged(run)) {
      // What a dispatch found it must wait for (a repository lost, a task workflow too old) is written
      // at once, and shown: a round of its own keeps it with the run (keepWaits) and edits the status.
      this.refreshStatus = true;
      return [...facts, { type: "tick", at: ctx.now() }];
    }
    if (this.statusDue || this.refreshStatus) await editStatus(ctx, run, engine);
    this.statusDue = false;
    this.refreshStatus = false;
    return facts;
  }

  log(message: string): void {
    this.ctx.log(message);
  }
}
