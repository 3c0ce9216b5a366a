/**
 * Local mode: runs a graph against a local git repository with the same engine. State lives on a
 * local git ref (compare-and-swap), integration and task branches live in the repository, each attempt
 * runs the in-job runner as a child process in its own worktree (in parallel up to max_concurrency),
 * a task "PR" is a merge commit into the integration branch, and integration merges into the target
 * when the engine says so. Interrupting and running again resumes.
 */
import { appendFileSync, existsSync, mkdirSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { git } from "../attempt/git.ts";
import { drive, settle } from "../engine/driver.ts";
import { createEngine, type Engine } from "../engine/engine.ts";
import { resumeRun } from "../engine/resume.ts";
import type { EngineEffect, EngineEvent, RunState } from "../engine/types.ts";
import type { Graph } from "../graph/model.ts";
import { AUTO_MERGE_FAILED } from "../engine/apply-event.ts";
import { lostResolutions } from "../engine/conflicts.ts";
import { checkAgent } from "../attempt/preflight.ts";
import { snapshotResolver } from "../attempt/egress/resolver.ts";
import { type AnthropicCredential, localCredential, userLogin } from "./credentials.ts";
import { LocalHost } from "./effects.ts";
import { GitRefStateStore } from "./git-store.ts";
import { adoptionFacts, mergedLocally, wentBack } from "./merge-record.ts";
import { answer, type Answer, type SteeringCommand, take } from "./inbox.ts";
import { checkRepositories } from "./repositories.ts";
import { checkRepository } from "./repository.ts";
import { cleanedAway, removeWorktrees } from "./clean.ts";
import { takeRunLock } from "./run-lock.ts";
import { latestRunNumber, startOver } from "./runs.ts";

export interface LocalRunOptions {
  graph: Graph;
  graphText: string;
  repo: string;
  /** Clones of the other repositories the graph names, by its name for each (`--repo NAME=PATH`). */
  repositories?: Record<string, string>;
  /** `--repos FILE`: the clones of the rest, a YAML mapping of names to paths (local/repositories.ts). */
  repositoriesFile?: string;
  /** The `agentrelay` entry that runs attempts (`attempt SPEC`) and the in-job commands. */
  entry: string;
  claudeBin: string;
  /** Environment for Claude Code (ANTHROPIC_BASE_URL for a scripted model, say). */
  claudeEnv: Record<string, string>;
  /** From a credentials file: the Anthropic credential and each token tier's variables. */
  credentials?: {
    /** The file's path, as the user gave it (messages name it). */
    file?: string;
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
  /** An error of the runner's own work (an attempt it could not run): always shown, unlike `onLog`. */
  onError?: (line: string) => void;
  /** Stops the run (its attempts with it); running the same command again resumes. */
  signal?: AbortSignal;
  /** Start a new run instead of resuming the latest (the previous run's branches are archived). */
  newRun?: boolean;
  /** A steering command to apply first (`agentrelay retry|cancel|reset` when no runner is live). */
  command?: SteeringCommand;
  /** The answer to `command`. */
  onAnswer?: (answer: Answer) => void;
  /**
   * Called just before a repeatable effect (a merge, say) is carried out: where the scenario bench's
   * third party pushes to the target between a verification and the merge it allowed.
   */
  beforeEffect?: (effect: EngineEffect) => void | Promise<void>;
}

export interface LocalRunResult {
  state: RunState;
  /** What changed since an earlier run of the same graph. */
  drift: string[];
  workRoot: string;
  /** The run had finished: its worktrees were removed (in every clone), how many. */
  cleanedWorktrees: number | null;
  /** The latest run had finished and was cleaned away, so this is a new one: the cleaned run's key. */
  afterCleaned: string | null;
}

/** Where a graph's local runs keep worktrees and work directories: `<repo>/.agentrelay/<graph>/`. */
export const workRootOf = (repo: string, graph: string): string => join(resolve(repo), ".agentrelay", graph);

export async function runLocal(options: LocalRunOptions): Promise<LocalRunResult> {
  const repo = resolve(options.repo);
  const { graph } = options;
  await checkRepository(repo, graph);
  const elsewhere = await checkRepositories(graph, options.repositories ?? {}, options.repositoriesFile);
  const store = new GitRefStateStore(repo, graph);
  // Worktrees and work directories live in <repo>/.agentrelay/<graph>/, excluded from git. (Not under
  // .git/: Claude Code protects .git directories and would not write there.)
  const gitDir = resolve(repo, await git(repo, ["rev-parse", "--git-common-dir"]));
  const workRoot = workRootOf(repo, graph.name);
  mkdirSync(workRoot, { recursive: true });
  // One live runner per graph and repository; what a dead one left running is stopped first.
  const lock = takeRunLock(workRoot, `graph '${graph.name}' in ${repo}`);
  try {
    const latest = await latestRunNumber(repo, graph.name);
    // A finished run that `agentrelay clean` took away has nothing left to resume or show but its
    // record: running the graph again is a new run, as `--new-run` would start.
    const afterCleaned =
      !options.newRun && !options.command && latest !== null
        ? await cleanedAway(repo, graph.name, await store.load(`${graph.name}/${latest}`))
        : null;
    const newRun = Boolean(options.newRun) || afterCleaned !== null;
    const runNumber = newRun ? (latest ?? 0) + 1 : (latest ?? 1);
    const engine: Engine = createEngine(graph, {
      attemptTimeoutMs: options.attemptTimeoutMs ?? 60 * 60_000,
      timelineLimit: 2000,
      runNumber,
    });
    const runKey = `${graph.name}/${runNumber}`;
    const startOverFrom = newRun ? latest : null;
    const result = await runLocked(options, {
      repo,
      elsewhere,
      engine,
      store,
      gitDir,
      workRoot,
      runKey,
      startOverFrom,
    });
    return { ...result, afterCleaned };
  } finally {
    lock.release();
  }
}

async function runLocked(
  options: LocalRunOptions,
  {
    repo,
    elsewhere,
    engine,
    store,
    gitDir,
    workRoot,
    runKey,
    startOverFrom,
  }: {
    repo: string;
    elsewhere: Record<string, string>;
    engine: Engine;
    store: GitRefStateStore;
    gitDir: string;
    workRoot: string;
    runKey: string;
    /** `--new-run`: the run whose branches are archived once every check passed (null: none). */
    startOverFrom: number | null;
  },
): Promise<Omit<LocalRunResult, "afterCleaned">> {
  const { graph } = options;
  const exclude = join(gitDir, "info", "exclude");
  mkdirSync(dirname(exclude), { recursive: true });
  if (!(existsSync(exclude) ? readFileSync(exclude, "utf8") : "").split("\n").includes("/.agentrelay/")) {
    appendFileSync(exclude, "\n/.agentrelay/\n");
  }
  const agentHome = join(workRoot, "home");
  mkdirSync(agentHome, { recursive: true });
  // The credential: the credentials file's, else the user's own (a key in the environment, which the
  // attempt inherits, or their Claude login); the attempt's runner holds it, the agent never does.
  const credential = localCredential({
    file: options.credentials
      ? { path: options.credentials.file ?? "the credentials file", anthropic: options.credentials.anthropic }
      : null,
    env: { ...process.env, ...options.claudeEnv },
    login: userLogin(),
  });
  const claudeEnv = {
    HOME: agentHome,
    DISABLE_AUTOUPDATER: "1",
    DISABLE_TELEMETRY: "1",
    ...options.claudeEnv,
    ...credential.env,
  };

  // Before anything is spent, the agent: a run that has nothing left to start needs none.
  const existing = await store.load(runKey);
  if (!existing || existing.state.outcome === null || options.command)
    await checkAgent({
      bin: options.claudeBin,
      // The attempt process inherits the runner's environment (attempt-process.ts).
      env: { ...process.env, ...claudeEnv },
      nameAnother: "name it with --claude PATH",
      logIn: credential.logIn,
      fixCredential: credential.fixCredential,
    });
  // Only now, every check passed, does the run change: a new run archives the last one's branches.
  // The other clones first: the graph's own clears the work directories their worktrees are in.
  if (startOverFrom !== null)
    for (const clone of [...Object.values(elsewhere), repo])
      await startOver(clone, graph.name, workRoot, startOverFrom);

  // Work that outlives a write (attempts): the run ends when none is left.
  const inFlight = new Set<Promise<void>>();
  const track = (work: Promise<void>) => {
    const tracked = work
      .catch((error) => {
        const line = `error: ${(error as Error).message}`;
        if (options.onError) options.onError(line);
        else options.onLog?.(null, line);
      })
      .finally(() => inFlight.delete(tracked));
    inFlight.add(tracked);
  };
  let state: RunState | undefined;
  // One drive at a time: the runner's own writes then never race each other (they would still be
  // correct, by compare-and-swap, but each race costs a write).
  let chain: Promise<unknown> = Promise.resolve();
  const apply = (facts: EngineEvent[], pending = false, onAnswer?: (a: Answer) => void): Promise<void> => {
    const next = chain.then(async () => {
      // Drives run one at a time, so the answer of this drive's command goes to its sender.
      host.onAnswer = onAnswer;
      try {
        const driven = await drive(host, runKey, facts, pending ? { pending } : {});
        if (driven) {
          state = driven.state;
          options.onState?.(driven.state);
        }
      } finally {
        host.onAnswer = undefined;
      }
    });
    chain = next.catch(() => undefined);
    return next;
  };
  const say = (line: string) => options.onLog?.(null, line);
  // No attempt of a task its integration branch has merged already (the state went back): taken as merged.
  const host = new (class extends LocalHost {
    override async repeatable(effect: EngineEffect): Promise<EngineEvent[]> {
      await options.beforeEffect?.(effect);
      return super.repeatable(effect);
    }
    override async afterWrite(effects: EngineEffect[], state: RunState): Promise<EngineEvent[]> {
      const starts = effects.flatMap((e) =>
        e.type === "dispatch" && state.tasks[e.task]?.attempt === e.attempt ? [e.task] : [],
      );
      const merged = starts.length > 0 ? await mergedLocally(repoOf, engine.plan, state, starts) : [];
      if (merged.length > 0) say(wentBack(runKey, merged));
      const rest = effects.filter((e) => e.type !== "dispatch" || !merged.includes(e.task));
      return [
        ...adoptionFacts(engine.plan, state.graph, merged, Date.now()),
        ...(await super.afterWrite(rest, state)),
      ];
    }
  })(
    repo,
    workRoot,
    store,
    engine,
    {
      entry: options.entry,
      graphText: options.graphText,
      claudeBin: options.claudeBin,
      // The task's token tier: its variables, from the credentials file.
      claudeEnv: (tier) => ({ ...claudeEnv, ...(options.credentials?.tokenTiers?.[tier] ?? {}) }),
      maxTurns: options.maxTurns ?? 60,
      attemptTimeoutMs: options.attemptTimeoutMs ?? 60 * 60_000,
      gateTimeoutMs: options.gateTimeoutMs ?? 600_000,
      ...(options.params ? { params: options.params } : {}),
      fixCredential: credential.fixCredential,
      // Before any attempt's agent exists: how the egress proxies resolve names (egress/resolver.ts).
      resolver: snapshotResolver(),
    },
    track,
    (facts) => apply(facts),
    (message, task) => options.onLog?.(task ?? null, message),
    elsewhere,
  );
  const repoOf = (workstream: string) => host.repoOf(workstream);
  options.signal?.addEventListener("abort", () => host.stop(), { once: true });

  // Commands from other terminals (`agentrelay retry|cancel|reset` while this runner is live).
  const commandOf = (c: SteeringCommand): EngineEvent =>
    c.command === "budget"
      ? { type: "command", ...c, at: Date.now() }
      : { type: "command", command: c.command, ...(c.task ? { task: c.task } : {}), at: Date.now() };
  const reply = (id: string) => (a: Answer) => {
    try {
      answer(workRoot, id, a, say);
    } catch (error) {
      say(`steering: the answer to ${id} could not be written: ${(error as Error).message}`);
    }
  };
  // What the inbox holds is untrusted: whatever it is, the runner says so and goes on.
  const readInbox = () => {
    let commands: ReturnType<typeof take> = [];
    try {
      commands = take(workRoot, say);
    } catch (error) {
      say(`steering: the inbox could not be read: ${(error as Error).message}`);
    }
    for (const { id, command } of commands)
      void apply([commandOf(command)], false, reply(id)).catch((error) =>
        reply(id)({ ok: false, message: (error as Error).message }),
      );
  };
  const inboxTimer = setInterval(readInbox, 250);

  // Start, or resume what an earlier invocation left.
  let drift: string[] = [];
  if (!existing) {
    const started = engine.start(Date.now());
    state = started.state;
    options.onState?.(state);
    await settle(host, runKey, null, started, engine);
  } else {
    const resumed = resumeRun(engine, graph, existing.state, Date.now());
    drift = resumed.drift;
    state = resumed.state;
    options.onState?.(state);
    if (resumed.state !== existing.state) {
      const version = await settle(host, runKey, existing.version, resumed, engine);
      if (version === null) throw new Error("the run's state changed while resuming; try again");
    }
    // What the integration branches merged that the state does not say (its ref was moved back) is
    // taken as merged first: nothing merged runs again.
    const unmerged = Object.entries(state.tasks)
      .filter(([, t]) => t.status !== "merged" && t.status !== "completed")
      .map(([id]) => id);
    const merged = await mergedLocally(repoOf, engine.plan, state, unmerged);
    if (merged.length > 0) say(wentBack(runKey, merged));
    const facts: EngineEvent[] = adoptionFacts(engine.plan, state.graph, merged, Date.now());
    // The command comes next: `cancel TASK` of an attempt the last invocation left running cancels
    // it rather than letting it be retried.
    if (options.command) facts.push(commandOf(options.command));
    // An integration "PR" left open is merged by a person merging the integration branch into its
    // target (git merge); the next invocation notices and goes on.
    // An auto-merge that failed (the target was checked out with uncommitted changes, say) is tried
    // again: "then run again" is what its reason told the user.
    for (const [id, ws] of Object.entries(state.workstreams)) {
      if (ws.status !== "pr_open") continue;
      const retry = ws.reason?.startsWith(AUTO_MERGE_FAILED) === true;
      if ((await host.mergedByPerson(id)) || (retry && (await host.mergeIntegration(id)).ok))
        facts.push({ type: "integration_pr_merged", workstream: id, at: Date.now() });
    }
    // Attempts that were running when the last invocation stopped have no process any more.
    for (const [id, t] of Object.entries(existing.state.tasks))
      if (t.status === "running")
        facts.push({
          type: "job_lost",
          task: id,
          attempt: t.attempt,
          reason: "the runner was interrupted",
          at: Date.now(),
        });
    // So were resolutions: their merges are asked again, and conflict again if nobody resolved them.
    facts.push(...lostResolutions(existing.state, engine.plan, "the runner was interrupted", Date.now()));
    // What waits its turn (a verification, a repair held back by the budget) is asked again.
    facts.push({ type: "tick", at: Date.now() });
    // Effects whose answers the last invocation did not see (merges, integration PRs) run again.
    await apply(facts, true, options.onAnswer);
  }

  // The run ends when no attempt is left and no command that came meanwhile started another.
  do {
    while (inFlight.size > 0) await Promise.race(inFlight);
    await chain;
    readInbox();
    await chain;
  } while (inFlight.size > 0);
  clearInterval(inboxTimer);
  const final = (await store.load(runKey))?.state ?? state!;
  // Finished, nothing is left to resume: the worktrees go (each holds a task branch checked out, which
  // `git branch -d` would refuse to delete); the branches stay, with the work (`agentrelay clean`).
  let cleanedWorktrees: number | null = null;
  if (final.outcome !== null && !options.signal?.aborted) {
    cleanedWorktrees = 0;
    for (const clone of [...Object.values(elsewhere), repo])
      cleanedWorktrees += await removeWorktrees(clone, workRoot);
  }
  return { state: final, drift, workRoot, cleanedWorktrees };
}
