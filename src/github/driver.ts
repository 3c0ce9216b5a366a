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
import { StateConflictError } from "../engine/store.ts";
import type { EngineEffect, EngineEvent } from "../engine/types.ts";
import type { Graph } from "../graph/model.ts";
import { messageOf, type RepoContext } from "./client.ts";
import { GitHubEffects, REPEATABLE } from "./effects.ts";
import { type GitHubMeta, type HostedRun, newMeta } from "./hosted-run.ts";
import { parseRunGraph, type RunSource } from "../protocol/run-source.ts";
import { editStatus, mirrorStatus, openTracking, taskCheckRun } from "./projections.ts";
import { GitHubStateStore } from "./state-store.ts";

/** Where a command came from, to answer it there. */
export interface Origin {
  issueNumber: number;
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
function engineFor(source: RunSource, runNumber: number, config: RepoContext["config"]): Engine {
  const key = createHash("sha256")
    .update(`${runNumber}\0${source.path}\0${source.text}\0${JSON.stringify(source.params ?? {})}`)
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

  async load(runKey: string, options: { fresh?: boolean } = {}): Promise<Loaded | null> {
    const stored = await this.store.load(runKey, options);
    if (!stored) return null;
    const run = stored.state as HostedRun;
    const engine = engineFor(run.source, run.runNumber, this.ctx.config);
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
    // Read afresh: the latest run's document comes with the list of runs.
    const latest = await this.latestRun(graph.name);
    const previous = latest > 0 ? await this.load(`${graph.name}/${latest}`) : null;
    if (previous && !previous.run.outcome) {
      const engine = engineFor(source, latest, this.ctx.config);
      const resumed = resumeRun(engine, graph, previous.run, this.ctx.now());
      if (resumed.state === previous.run) return { runKey: previous.run.runKey, started: false, drift: [] };
      const next = { ...resumed.state, source, github: previous.run.github } as HostedRun;
      const version = await this.store.compareAndSwap(next.runKey, previous.version, next);
      if (version === null)
        throw new StateConflictError(`run ${next.runKey} changed while resuming; the next event resumes it`);
      await this.after(
        next,
        engine,
        resumed.effects.filter((e) => !REPEATABLE.has(e.type)),
        version,
        true,
      );
      // Branches for new workstreams and the like go through drive, like every repeatable effect.
      await this.drive(next.runKey, [], { pending: true });
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
    initial: EngineEvent[],
    options: {
      pending?: boolean;
      origin?: Origin;
      refreshStatus?: boolean;
      loaded?: Loaded;
      /** The handed-over run has changes of its own to write. */
      unsaved?: boolean;
    } = {},
  ): Promise<HostedRun | null> {
    // Facts an effect produced in an earlier round are reused, so a lost race repeats no API call.
    const produced = new Map<string, EngineEvent[]>();
    // Ids of what a lost round created on GitHub (issue, comments, check runs), kept for the next round.
    const created: Omit<GitHubMeta, "statusAt"> = {
      trackingIssue: null,
      statusComment: null,
      checkRuns: {},
      laneComments: {},
    };
    let fresh = false;
    for (let round = 0; round < 10; round++) {
      // A caller that has just read the run hands it over (one read fewer); later rounds read again.
      const loaded = round === 0 && options.loaded ? options.loaded : await this.load(runKey, { fresh });
      if (!loaded) return null;
      const { run, version, engine } = loaded;
      const before = run.seq;
      const metaBefore = JSON.stringify(run.github);
      run.github.trackingIssue ??= created.trackingIssue;
      run.github.statusComment ??= created.statusComment;
      run.github.checkRuns = { ...created.checkRuns, ...run.github.checkRuns };
      run.github.laneComments = { ...created.laneComments, ...run.github.laneComments };
      const later: EngineEffect[] = [];
      const facts = [...initial];
      const carryOut = async (effects: EngineEffect[]) => {
        for (const effect of effects) {
          if (!REPEATABLE.has(effect.type)) {
            later.push(effect);
            continue;
          }
          let events = produced.get(effect.key);
          if (!events) {
            try {
              events = await this.effects.repeatable(effect, run, engine);
            } catch (error) {
              // The facts so far are still written; the effect stays owed and the reconciler retries it.
              this.ctx.log(
                `${effect.key} (${effect.type}) failed, left to the reconciler: ${messageOf(error)}`,
              );
              continue;
            }
            produced.set(effect.key, events);
          }
          facts.push(...events);
        }
      };
      if (options.pending) await carryOut(engine.pendingEffects(run));
      const verdicts = new Map<string, number>();
      for (let i = 0; i < facts.length; i++) {
        const fact = facts[i]!;
        const seq = run.seq;
        await carryOut(engine.apply(run, fact));
        if (
          (fact.type === "job_succeeded" || fact.type === "job_failed" || fact.type === "job_lost") &&
          run.seq !== seq
        )
          verdicts.set(fact.task, fact.attempt);
      }
      for (const [task, attempt] of verdicts) await taskCheckRun(this.ctx, run, task, attempt);
      await mirrorStatus(this.ctx, run, engine);
      const statusDue = options.refreshStatus === true || this.statusDue(run, later);
      if (statusDue) run.github.statusAt = this.ctx.now();
      const unsaved = round === 0 && options.unsaved === true;
      if (!unsaved && run.seq === before && JSON.stringify(run.github) === metaBefore) {
        // Nothing to do, as far as a cached state tells: ask GitHub before concluding so.
        if (loaded.cached) {
          fresh = true;
          continue;
        }
        await this.after(run, engine, later, version, false, options.origin);
        return run;
      }
      const written = await this.store.compareAndSwap(runKey, version, run);
      if (written === null) {
        fresh = true;
        created.trackingIssue = run.github.trackingIssue;
        created.statusComment = run.github.statusComment;
        Object.assign(created.checkRuns, run.github.checkRuns);
        Object.assign(created.laneComments, run.github.laneComments);
        continue;
      }
      await this.after(run, engine, later, written, statusDue, options.origin);
      return run;
    }
    throw new StateConflictError(`gave up on run '${runKey}' after 10 conflicting writes`);
  }

  private statusDue(run: HostedRun, effects: EngineEffect[]): boolean {
    if (!effects.some((e) => e.type === "update_status" || e.type === "finish_run")) return false;
    return run.outcome !== null || this.ctx.now() - run.github.statusAt >= this.ctx.config.statusIntervalMs;
  }

  /** Effects that must follow the write: jobs, cancellations, resets, replies, status edits. */
  private async after(
    run: HostedRun,
    engine: Engine,
    effects: EngineEffect[],
    version: string,
    status: boolean,
    origin?: Origin,
  ): Promise<void> {
    const facts: EngineEvent[] = [];
    for (const effect of effects) {
      switch (effect.type) {
        case "dispatch":
          facts.push(...(await this.effects.dispatch(run, engine, effect.task, effect.attempt, version)));
          break;
        case "cancel_attempt":
          await this.effects.cancel(run, effect.task, effect.attempt);
          break;
        case "reset_task":
          await this.effects.reset(run, effect.task, effect.pr);
          break;
        case "reply":
          if (origin)
            await this.ctx.octokit.rest.issues.createComment({
              owner: this.ctx.owner,
              repo: this.ctx.repo,
              issue_number: origin.issueNumber,
              body: effect.message,
            });
          break;
        default:
          break;
      }
    }
    if (status) await editStatus(this.ctx, run, engine);
    if (facts.length > 0) await this.drive(run.runKey, facts, origin ? { origin } : {});
  }
}
