/**
 * bench/engine: decide() throughput, and the time and memory to run generated graphs to completion
 * in the simulator. Target: a 10,000-task graph in under 2 s, memory linear in tasks.
 */
import { createEngine } from "../src/engine/engine.ts";
import { simulate } from "../src/engine/simulate.ts";
import { percent, unitCost } from "../src/engine/spend.ts";
import { usd } from "../src/graph/amount.ts";
import { parseGraph } from "../src/graph/load.ts";
import { generateGraph } from "./graph-scale.ts";
import { table } from "./table.ts";

const LIMITS = { limits: { maxBytes: 64 << 20 } };

/** decide() is pure: it copies the state, so its cost grows with the graph; apply() updates in place. */
function throughput(tasks: number): string[] {
  const graph = parseGraph("bench.yaml", generateGraph(tasks), LIMITS);
  const engine = createEngine(graph);
  const { state } = engine.start(0);
  const events = [{ type: "tick" as const, at: 1 }];
  // A realistic mix: duplicated reports that change nothing, and real progress.
  const ws = Object.keys(state.workstreams)[0]!;
  let decided = 0;
  const start = performance.now();
  let current = engine.decide(state, { type: "workstream_prepared", workstream: ws, at: 1 }).state;
  while (performance.now() - start < 1000) {
    current = engine.decide(current, events[0]!).state;
    decided++;
  }
  const decideRate = decided / ((performance.now() - start) / 1000);
  const sim = simulate(graph, { engine: { timelineLimit: 1000 } });
  const applyRate = sim.eventCount / (timeIt(() => simulate(graph)) / 1000);
  return [
    String(tasks),
    `${Math.round(decideRate).toLocaleString("en")}/s`,
    `${Math.round(applyRate).toLocaleString("en")}/s`,
  ];
}

function timeIt(fn: () => void): number {
  const start = performance.now();
  fn();
  return performance.now() - start;
}

function completion(tasks: number): string[] {
  const graph = parseGraph("bench.yaml", generateGraph(tasks), LIMITS);
  simulate(parseGraph("warm.yaml", generateGraph(200), LIMITS));
  globalThis.gc?.();
  const before = process.memoryUsage().heapUsed;
  const start = performance.now();
  const result = simulate(graph);
  const ms = performance.now() - start;
  globalThis.gc?.();
  // Measured while `result` (the whole run state, with its timeline) is still alive.
  const heap = process.memoryUsage().heapUsed - before;
  return [
    String(tasks),
    String(result.eventCount),
    `${ms.toFixed(0)} ms`,
    result.outcome,
    `${(heap / 1e6).toFixed(1)} MB`,
    `${(heap / tasks / 1e3).toFixed(1)} kB`,
  ];
}

/**
 * What each merged result cost in a simulated run with its workstreams verified before they land: each
 * attempt spends $0.30, one task in fifty fails once, one workstream in three conflicts once with its
 * target and one in four breaks together with what landed first (a repair fixes it).
 */
export function costPerResult(tasks: number): string[] {
  const text = generateGraph(tasks)
    .replace("max_concurrency: 8", "max_concurrency: 8\nmax_task_attempts: 2")
    .replaceAll("    auto_merge: true", "    auto_merge: true\n    integration_gate: make test");
  const graph = parseGraph("bench.yaml", text, LIMITS);
  const workstreams = graph.workstreams.map((w) => w.id);
  const result = simulate(graph, {
    costPerAttempt: 300_000,
    failures: new Map(graph.tasks.filter((_, i) => i % 50 === 25).map((t) => [t.id, 1])),
    integrationConflicts: new Map(workstreams.filter((_, i) => i % 3 === 1).map((w) => [w, 1])),
    brokenTogether: new Map(workstreams.filter((_, i) => i % 4 === 2).map((w) => [w, 1])),
    engine: { timelineLimit: 1000 },
  });
  const unit = unitCost(result.state);
  const or = (micros: number | null) => (micros === null ? "" : usd(micros));
  return [
    String(tasks),
    usd(unit.spentMicros),
    `${or(unit.perMergedTaskMicros)} (${unit.mergedTasks.toLocaleString("en-US")})`,
    `${or(unit.perLandedWorkstreamMicros)} (${unit.landedWorkstreams.toLocaleString("en-US")})`,
    percent(unit.shares.failed),
    percent(unit.shares.resolutions),
    percent(unit.shares.repairs),
  ];
}

export function engineBench(): string {
  return [
    table(
      ["tasks", "decide() (pure, copies state)", "apply() in the simulator"],
      [100, 1_000, 10_000].map(throughput),
    ),
    "",
    table(
      ["tasks", "events", "simulated to completion", "outcome", "run state in heap", "per task"],
      [1_000, 10_000, 50_000].map(completion),
    ),
    "",
    "Target: 10,000 tasks to completion in under 2 s, memory linear in tasks (a flat 'per task' column).",
    "",
    table(
      [
        "tasks",
        "spent",
        "per merged task (merged)",
        "per landed workstream (landed)",
        "on failed work",
        "on resolutions",
        "on repairs",
      ],
      [300, 3_000].map(costPerResult),
    ),
    "",
    "Cost per merged result: the run's spend over what merged; the shares are of the spend (the status comment's cost line).",
  ].join("\n");
}
