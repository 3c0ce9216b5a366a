/**
 * The simulator: the engine driven by a simulated executor in which every attempt succeeds unless told
 * otherwise. It answers "what happens if this task fails?" without GitHub or an agent.
 *
 * A simulated reviewer merges an integration PR that is left open (no auto-merge, or a design concern)
 * when, and only when, a pending task needs it merged to go on, as a person watching the run would.
 */
import { type Micros, MICROS_PER_USD } from "../graph/amount.ts";
import type { Graph } from "../graph/model.ts";
import type { Plan } from "../plan/model.ts";
import { usd } from "./budget.ts";
import { holdKey, holds } from "./holds.ts";
import { standing } from "./progress.ts";
import { createEngine, type EngineOptions } from "./engine.ts";
import type { EngineEffect, EngineEvent, Outcome, PullRequest, RunState } from "./types.ts";

export interface SimulateOptions {
  /** Task id -> number of first attempts that fail (Infinity: every attempt). */
  failures?: Map<string, number>;
  /** Tasks whose attempts record a design concern. */
  concerns?: Set<string>;
  /** Tasks that finish without changes (no PR). */
  noChanges?: Set<string>;
  /** Let a simulated reviewer merge integration PRs that block pending work (default true). */
  reviewerMerges?: boolean;
  /** What each attempt spends, in micro-dollars (an attempt whose cap is less is stopped at its cap). */
  costPerAttempt?: Micros;
  /** Workstream id -> number of first merges of its integration PR that conflict with the target. */
  integrationConflicts?: Map<string, number>;
  /** Task id -> number of first merges of its PR that conflict with the integration branch. */
  taskConflicts?: Map<string, number>;
  /** The files a conflict is in (default one, `simulated.txt`). */
  conflictFiles?: string[];
  /**
   * Workstream id -> repairs its integration branch needs before its gates pass with its target (it
   * merges cleanly but breaks together with what landed first; Infinity: no repair fixes it).
   */
  brokenTogether?: Map<string, number>;
  /** Stop after this many events: the run as it stands mid-way (jobs running, PRs open). */
  maxEvents?: number;
  engine?: EngineOptions;
}

export interface SimulationEvent {
  type: string;
  task?: string;
  workstream?: string;
  attempt?: number;
}

export interface SimulationResult {
  /** The plan the engine ran. */
  plan: Plan;
  state: RunState;
  outcome: SimulatedOutcome;
  /** Events applied to the engine, and effects executed, for benchmarks. */
  eventCount: number;
  /** Integration PRs the simulated reviewer merged. */
  reviewerMerged: string[];
}

const MINUTE = 60_000;

/** What a simulated world answers to an effect: the facts an adapter would report back. */
export function simulatedResponse(
  effect: EngineEffect,
  world: {
    failures: Map<string, number>;
    concerns: Set<string>;
    noChanges?: Set<string> | undefined;
    costPerAttempt?: Micros | undefined;
    /** Workstream -> resolutions its integration branch needs before it merges cleanly. */
    integrationConflicts?: Map<string, number> | undefined;
    /** Task -> resolutions its branch needs before its PR merges cleanly. */
    taskConflicts?: Map<string, number> | undefined;
    conflictFiles?: string[] | undefined;
    /** Workstream -> repairs its branch needs before its gates pass as it will land. */
    brokenTogether?: Map<string, number> | undefined;
    /** Workstream -> repairs run so far (the world's own count). */
    repaired?: Map<string, number>;
  },
  at: number,
  pullRequest: (key: string) => PullRequest,
): EngineEvent[] {
  switch (effect.type) {
    case "prepare_workstream":
      return [{ type: "workstream_prepared", workstream: effect.workstream, at }];
    case "dispatch": {
      const { task, attempt, capMicros } = effect;
      const started: EngineEvent = { type: "job_started", task, attempt, at };
      const cost = world.costPerAttempt;
      const spent = cost === undefined ? {} : { costMicros: Math.min(cost, capMicros ?? Infinity) };
      if (cost !== undefined && capMicros !== undefined && cost > capMicros) {
        const reason = `stopped at its budget of ${usd(capMicros)}`;
        return [started, { type: "job_failed", task, attempt, reason, overBudget: true, ...spent, at }];
      }
      if (attempt <= (world.failures.get(task) ?? 0)) {
        return [started, { type: "job_failed", task, attempt, reason: "simulated failure", ...spent, at }];
      }
      const concerns = world.concerns.has(task) ? ["simulated design concern"] : [];
      const noPr = world.noChanges?.has(task) ?? false;
      const summary = `simulated work for ${task}`;
      return [started, { type: "job_succeeded", task, attempt, concerns, noPr, summary, ...spent, at }];
    }
    case "open_task_pr":
      return [{ type: "task_pr_opened", task: effect.task, pr: pullRequest(effect.key), at }];
    case "merge_task_pr": {
      const { task, resolutions = 0 } = effect;
      if (resolutions < (world.taskConflicts?.get(task) ?? 0))
        return [
          { type: "task_conflicted", task, files: world.conflictFiles ?? ["simulated.txt"], resolutions, at },
        ];
      return [{ type: "task_pr_merged", task, pr: effect.pr, at }];
    }
    case "open_integration_pr":
      return [
        { type: "integration_pr_opened", workstream: effect.workstream, pr: pullRequest(effect.key), at },
      ];
    case "merge_integration_pr": {
      // The branch conflicts until it has had that many resolutions: the first N merges conflict.
      const { workstream, resolutions = 0 } = effect;
      if (resolutions < (world.integrationConflicts?.get(workstream) ?? 0)) {
        return [
          {
            type: "integration_conflicted",
            workstream,
            files: world.conflictFiles ?? ["simulated.txt"],
            resolutions,
            at,
          },
        ];
      }
      return [{ type: "integration_pr_merged", workstream, at }];
    }
    case "verify_integration":
    case "repair_integration": {
      const { workstream, n } = effect;
      const repairing = effect.type === "repair_integration";
      const repaired = (world.repaired?.get(workstream) ?? 0) + (repairing ? 1 : 0);
      world.repaired?.set(workstream, repaired);
      const ok = repaired >= (world.brokenTogether?.get(workstream) ?? 0);
      const cost =
        repairing && world.costPerAttempt !== undefined
          ? { costMicros: Math.min(world.costPerAttempt, effect.capMicros ?? Infinity) }
          : {};
      return [
        {
          type: "resolution_finished",
          workstream,
          kind: repairing ? "repair" : "verify",
          n,
          ok,
          ...(ok
            ? { base: `sim:target`, head: `sim:${workstream}:${repaired}` }
            : { reason: "the gates failed", output: "simulated failure of the gates" }),
          ...(repairing ? { summary: `simulated repair of ${workstream}` } : {}),
          ...cost,
          at,
        },
      ];
    }
    case "resolve_conflicts": {
      const cost =
        world.costPerAttempt === undefined
          ? {}
          : { costMicros: Math.min(world.costPerAttempt, effect.capMicros ?? Infinity) };
      const { workstream, task, n } = effect;
      return [
        { type: "resolution_finished", workstream, ...(task ? { task } : {}), n, ok: true, ...cost, at },
      ];
    }
    default:
      return [];
  }
}

export function simulate(graph: Graph, options: SimulateOptions = {}): SimulationResult {
  const engine = createEngine(graph, options.engine);
  const world = {
    failures: options.failures ?? new Map<string, number>(),
    concerns: options.concerns ?? new Set<string>(),
    noChanges: options.noChanges,
    costPerAttempt: options.costPerAttempt,
    integrationConflicts: options.integrationConflicts,
    taskConflicts: options.taskConflicts,
    conflictFiles: options.conflictFiles,
    brokenTogether: options.brokenTogether,
    repaired: new Map<string, number>(),
  };
  let clock = 0;
  let eventCount = 0;
  const pullRequests = new Map<string, PullRequest>();
  const pullRequest = (key: string) => {
    if (!pullRequests.has(key))
      pullRequests.set(key, { number: pullRequests.size + 1, url: `sim://pull/${pullRequests.size + 1}` });
    return pullRequests.get(key)!;
  };
  const reviewerMerged: string[] = [];
  const queue: EngineEvent[] = [];
  const execute = (effect: EngineEffect) =>
    queue.push(...simulatedResponse(effect, world, (clock += MINUTE), pullRequest));

  const { state, effects } = engine.start(clock);
  effects.forEach(execute);
  const limit = options.maxEvents ?? Infinity;
  const apply = (event: EngineEvent) => {
    eventCount++;
    engine.apply(state, event).forEach(execute);
  };
  let rounds = 0;
  for (;;) {
    while (queue.length > 0 && eventCount < limit) apply(queue.shift()!);
    if (state.outcome !== null || eventCount >= limit) break;
    // With nothing left to answer, the clock moves as a run's does: the reconciler's periodic tick
    // (the next landing's verification, a repair a budget held back), then what the state says is
    // owed (a merge asked again once running attempts gave back the budget a resolution needs).
    const before = JSON.stringify(state);
    apply({ type: "tick", at: (clock += MINUTE) });
    engine.pendingEffects(state).forEach(execute);
    while (queue.length > 0 && eventCount < limit) apply(queue.shift()!);
    if (state.outcome !== null || eventCount >= limit) break;
    // A round that changed the state goes on (bounded: an engine that changes it forever is a bug).
    if (JSON.stringify(state) !== before && ++rounds < 100 + 10 * engine.plan.order.length) continue;
    if (options.reviewerMerges === false) break;
    const needed = neededIntegration(state, engine.plan.upstreamWorkstreams);
    if (needed === undefined) break;
    reviewerMerged.push(needed);
    queue.push({ type: "integration_pr_merged", workstream: needed, at: (clock += MINUTE) });
  }
  return { plan: engine.plan, state, outcome: outcomeOf(engine.plan, state), eventCount, reviewerMerged };
}

/**
 * Where a simulated run stands, as its state says it (at any `--at`): its outcome once it has one;
 * `running` while something moves on its own (a job, a PR being merged, a verification); else what it
 * waits for, a spent budget or a person.
 */
export type SimulatedOutcome = Outcome | "running" | "waiting_for_review" | "waiting_for_budget";

/** An open integration PR that a pending task waits for, in workstream order. */
export function neededIntegration(state: RunState, upstream: Map<string, string[]>): string | undefined {
  const waitedFor = new Set<string>();
  for (const [id, t] of Object.entries(state.tasks)) {
    if (t.status !== "pending") continue;
    for (const u of upstream.get(id) ?? []) if (state.workstreams[u]!.status === "pr_open") waitedFor.add(u);
  }
  return Object.keys(state.workstreams).find((w) => waitedFor.has(w));
}

/** The outcome the run's state holds (`SimulatedOutcome`). */
export function outcomeOf(plan: Plan, state: RunState): SimulatedOutcome {
  if (state.outcome !== null) return state.outcome;
  const now = standing(plan, state);
  if (now.moving) return "running";
  if (now.waitsForBudget) return "waiting_for_budget";
  if (state.cancelled) return "cancelled";
  if (now.forYou) return "waiting_for_review";
  // Nothing moves and no one is asked (a stuck loop's pending tasks are left, as agentrelay does).
  const failed =
    Object.values(state.tasks).some(
      (t) => t.status === "failed" || t.status === "blocked" || t.status === "cancelled",
    ) || Object.values(state.workstreams).some((w) => w.status === "failed");
  return failed ? "completed_with_failures" : "succeeded";
}

/**
 * The `--json` shape of `agentrelay simulate`; each task that is not done says what holds it
 * (engine/holds.ts: `failed`, `blocked:task:<root>`, `pr:task:<id>`, `pr:workstream:<id>`,
 * `budget:<scope>`, `overlap:<workstream>`, `turn`, `at_work`), as the status comment counts it.
 */
export function simulationJson(result: SimulationResult): object {
  const { state } = result;
  const held = holds(result.plan, state);
  return {
    outcome: result.outcome,
    events: state.timeline.map((e) => ({
      type: e.type,
      ...(e.task !== undefined ? { task: e.task } : {}),
      ...(e.workstream !== undefined ? { workstream: e.workstream } : {}),
      ...(e.attempt !== undefined ? { attempt: e.attempt } : {}),
      ...(e.type.startsWith("budget_") ||
      e.type === "conflict" ||
      e.type.startsWith("resolution") ||
      e.type.startsWith("verifi") ||
      e.type.startsWith("repair")
        ? { detail: e.detail }
        : {}),
    })),
    ...(state.budget ? { spentUsd: state.budget.run.spentMicros / MICROS_PER_USD } : {}),
    tasks: Object.fromEntries(
      Object.entries(state.tasks).map(([id, t]) => {
        const hold = held.get(id);
        return [id, { status: t.status, attempts: t.attempt, ...(hold ? { heldBy: holdKey(hold) } : {}) }];
      }),
    ),
    workstreams: Object.fromEntries(
      Object.entries(state.workstreams).map(([id, w]) => [id, { status: w.status }]),
    ),
  };
}
