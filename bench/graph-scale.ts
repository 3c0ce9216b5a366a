/**
 * bench/graph-scale: load + validate + plan time and peak memory for generated graphs of 1k, 10k and
 * 50k tasks. Target: 10,000 tasks (about 1.4 MB of YAML) in under 250 ms, with validation adding at
 * most a quarter to the raw YAML parse time.
 */

import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { compileGraph, parseGraph } from "../src/graph/load.ts";
import { loadYaml } from "../src/graph/yaml.ts";
import { buildPlan } from "../src/plan/plan.ts";
import { table } from "./table.ts";

const BENCH_BIN = fileURLToPath(new URL("../bin/bench.js", import.meta.url));

/** A graph shaped like real ones: workstreams of 100 consecutive tasks, each depending on its predecessor and on one 7 back
 * (so each workstream also waits for the one before it). */
export function generateGraph(tasks: number): string {
  const wsIds = Math.max(1, Math.floor(tasks / 100));
  const out: string[] = [`name: scale-${tasks}`, "max_concurrency: 8", "workstreams:"];
  for (let w = 0; w < wsIds; w++) out.push(`  - id: ws_${w}`, "    auto_merge: true");
  out.push("tasks:");
  for (let i = 0; i < tasks; i++) {
    const deps = [];
    if (i > 0) deps.push(`t${i - 1}`);
    if (i > 7) deps.push(`t${i - 7}`);
    out.push(
      `  - id: t${i}`,
      `    workstream_id: ws_${Math.min(wsIds - 1, Math.floor(i / 100))}`,
      "    role: implementer",
      `    description: Implement module ${i} with tests.`,
      `    dependencies: [${deps.join(", ")}]`,
    );
  }
  return `${out.join("\n")}\n`;
}

function median(samples: number[]): number {
  const s = [...samples].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

const LIMITS = { maxBytes: 64 << 20, maxExpandedNodes: 10_000_000, maxDepth: 64 };

type Stage = "parse" | "validate" | "plan";
const STAGES: Stage[] = ["parse", "validate", "plan"];

/**
 * Measurements in a fresh process, as the CLI or the app meets a graph. The code is first warmed up on
 * a small graph (so the JIT has run). "cold" is the first load of the big graph on a fresh heap, as a
 * one-shot CLI run sees it; "warm" is the median of later loads with a collection before each, as a
 * long-running app sees it. Warm rounds take the three stages in turn, so that the parse and the
 * validation they are compared with meet the same machine (this VM's speed drifts within seconds).
 */
export function graphScaleWorker(argv: string[]): string {
  const size = Number(argv[0]);
  const first = argv[1] as Stage;
  const warmup = generateGraph(500);
  for (let i = 0; i < 20; i++) buildPlan(parseGraph("warm.yaml", warmup, { limits: LIMITS }));
  const text = generateGraph(size);
  const once = (stage: Stage) => {
    globalThis.gc?.();
    const start = performance.now();
    if (stage === "parse") loadYaml("scale.yaml", text, LIMITS);
    else if (stage === "validate") parseGraph("scale.yaml", text, { limits: LIMITS });
    else buildPlan(parseGraph("scale.yaml", text, { limits: LIMITS }));
    // The parse and the validation each pay for collecting their own garbage: otherwise the parser's
    // (js-yaml's event list, ~30 ms at 10,000 tasks) is collected during, and billed to, validation.
    // The whole load is wall time to a plan, collection left for later, as a caller sees it.
    if (stage !== "plan") globalThis.gc?.();
    return performance.now() - start;
  };
  // The first load of the big graph, on a fresh heap. In a "validate" process it is timed in its two
  // phases as well, so that the cold share compares the parse and validation of that very load (two
  // processes, even seconds apart, meet this VM at different speeds).
  let coldShare: number | undefined;
  let cold: number;
  if (first === "validate") {
    globalThis.gc?.();
    const start = performance.now();
    const yaml = loadYaml("scale.yaml", text, LIMITS);
    const parsed = performance.now();
    compileGraph(yaml);
    const end = performance.now();
    globalThis.gc?.();
    cold = performance.now() - start;
    coldShare = (end - parsed) / (parsed - start);
    if (argv[2] === "cold-only") return JSON.stringify({ coldShare });
  } else {
    cold = once(first);
  }
  const rounds = size >= 50_000 ? 3 : 9;
  const warm = Object.fromEntries(STAGES.map((stage) => [stage, [] as number[]])) as Record<Stage, number[]>;
  for (let r = 0; r < rounds; r++) for (const stage of STAGES) warm[stage].push(once(stage));
  return JSON.stringify({
    cold,
    coldShare,
    warm: Object.fromEntries(STAGES.map((stage) => [stage, median(warm[stage])])),
    bytes: Buffer.byteLength(text),
    peakRss: process.resourceUsage().maxRSS * 1024,
  });
}

interface Sample {
  cold: number;
  coldShare?: number;
  warm: Record<Stage, number>;
  bytes: number;
  peakRss: number;
}

function worker(args: string[]): string {
  const out = execFileSync(process.execPath, ["--expose-gc", BENCH_BIN, "graph-scale-worker", ...args], {
    encoding: "utf8",
  });
  return out.trim().split("\n").pop()!;
}

/**
 * The cold share of graphs around the target size, one fresh process each. Whether V8's first young
 * collection after the parse (which copies the freshly parsed tree, ~10 ms) falls inside validation or
 * after it depends on the exact file size, so a single size can be lucky or unlucky.
 */
function coldSpread(): number[] {
  const shares: number[] = [];
  for (let size = 9_000; size <= 11_000; size += 250) {
    shares.push(
      (JSON.parse(worker([String(size), "validate", "cold-only"])) as { coldShare: number }).coldShare,
    );
  }
  return shares.sort((a, b) => a - b);
}

/** Runs `runs` fresh processes whose cold load is `stage`; medians across them. */
function measure(size: number, stage: Stage, runs: number): Sample {
  const samples: Sample[] = [];
  for (let i = 0; i < runs; i++) {
    samples.push(JSON.parse(worker([String(size), stage])) as Sample);
  }
  return {
    cold: median(samples.map((s) => s.cold)),
    coldShare: stage === "validate" ? median(samples.map((s) => s.coldShare!)) : undefined,
    warm: Object.fromEntries(STAGES.map((st) => [st, median(samples.map((s) => s.warm[st]))])) as Record<
      Stage,
      number
    >,
    bytes: samples[0]!.bytes,
    peakRss: Math.max(...samples.map((s) => s.peakRss)),
  };
}

export function graphScale(): string {
  const rows: string[][] = [];
  const ms = (n: number) => `${n.toFixed(0)} ms`;
  const percent = (share: number) => `${(share * 100).toFixed(0)}%`;
  for (const size of [1_000, 10_000, 50_000]) {
    const runs = size >= 50_000 ? 3 : 5;
    const parse = measure(size, "parse", runs);
    const load = measure(size, "validate", runs);
    const total = measure(size, "plan", runs);
    const all = [parse, load, total];
    const warm = (stage: Stage) => median(all.map((m) => m.warm[stage]));
    const share = (a: number, b: number) => percent((a - b) / b);
    rows.push([
      String(size),
      `${(parse.bytes / 1e6).toFixed(2)} MB`,
      `${ms(warm("parse"))} / ${ms(parse.cold)}`,
      `${share(warm("validate"), warm("parse"))} / ${percent(load.coldShare!)}`,
      `${ms(warm("plan"))} / ${ms(total.cold)}`,
      `${(total.peakRss / 1e6).toFixed(0)} MB`,
    ]);
  }
  const spread = coldSpread();
  return [
    table(
      [
        "tasks",
        "YAML",
        "parse, warm / cold",
        "validation adds, warm / cold",
        "load+validate+plan, warm / cold",
        "peak RSS",
      ],
      rows,
    ),
    "",
    "Targets (10,000 tasks): load+validate+plan under 250 ms; validation at most 25% of the raw parse.",
    "warm: median of repeated loads in one process (a running app); cold: the first load in a fresh process (one CLI run).",
    "warm, parse and validation are each timed up to the collection of their own garbage; cold, validation is compared with the parse of the same first load.",
    "The whole load is wall time to the plan.",
    `Cold validation share at 9,000-11,000 tasks (${spread.length} sizes, a fresh process each): median ${percent(median(spread))}, worst ${percent(spread.at(-1)!)}.`,
  ].join("\n");
}
