/**
 * bench/graph-scale: load + validate + plan time and peak memory for generated graphs of 1k, 10k and
 * 50k tasks. Target: 10,000 tasks (about 1.4 MB of YAML) in under 250 ms, with validation adding at
 * most a quarter to the raw YAML parse time.
 */

import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { parseGraph } from "../src/graph/load.ts";
import { loadYaml } from "../src/graph/yaml.ts";
import { buildPlan } from "../src/plan/plan.ts";
import { table } from "./table.ts";

const BENCH_BIN = fileURLToPath(new URL("../bin/bench.js", import.meta.url));

/** A graph shaped like real ones: lanes of 100 consecutive tasks, each depending on its predecessor and on one 7 back
 * (so each lane also waits for the one before it). */
export function generateGraph(tasks: number): string {
  const lanes = Math.max(1, Math.floor(tasks / 100));
  const out: string[] = [`name: scale-${tasks}`, "max_concurrency: 8", "workstreams:"];
  for (let w = 0; w < lanes; w++) out.push(`  - id: ws_${w}`, "    auto_merge: true");
  out.push("tasks:");
  for (let i = 0; i < tasks; i++) {
    const deps = [];
    if (i > 0) deps.push(`t${i - 1}`);
    if (i > 7) deps.push(`t${i - 7}`);
    out.push(
      `  - id: t${i}`,
      `    workstream_id: ws_${Math.min(lanes - 1, Math.floor(i / 100))}`,
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

/**
 * Measurements in a fresh process, as the CLI or the app meets a graph. The code is first warmed up on
 * a small graph (so the JIT has run). "cold" is the first load of the big graph on a fresh heap, as a
 * one-shot CLI run sees it; "warm" is the median of later loads with a collection before each, as a
 * long-running app sees it.
 */
export function graphScaleWorker(argv: string[]): string {
  const size = Number(argv[0]);
  const stage = argv[1] as "parse" | "validate" | "plan";
  const warmup = generateGraph(500);
  for (let i = 0; i < 20; i++) buildPlan(parseGraph("warm.yaml", warmup, { limits: LIMITS }));
  const text = generateGraph(size);
  const once = () => {
    globalThis.gc?.();
    const start = performance.now();
    if (stage === "parse") loadYaml("scale.yaml", text, LIMITS);
    else if (stage === "validate") parseGraph("scale.yaml", text, { limits: LIMITS });
    else buildPlan(parseGraph("scale.yaml", text, { limits: LIMITS }));
    return performance.now() - start;
  };
  const cold = once();
  const warm = median(Array.from({ length: size >= 50_000 ? 3 : 7 }, once));
  return JSON.stringify({
    cold,
    warm,
    bytes: Buffer.byteLength(text),
    peakRss: process.resourceUsage().maxRSS * 1024,
  });
}

interface Sample {
  cold: number;
  warm: number;
  bytes: number;
  peakRss: number;
}

function measure(size: number, stage: string, runs: number): Sample {
  const samples: Sample[] = [];
  for (let i = 0; i < runs; i++) {
    const out = execFileSync(
      process.execPath,
      ["--expose-gc", BENCH_BIN, "graph-scale-worker", String(size), stage],
      {
        encoding: "utf8",
      },
    );
    samples.push(JSON.parse(out.trim().split("\n").pop()!) as Sample);
  }
  return {
    cold: median(samples.map((s) => s.cold)),
    warm: median(samples.map((s) => s.warm)),
    bytes: samples[0]!.bytes,
    peakRss: Math.max(...samples.map((s) => s.peakRss)),
  };
}

export function graphScale(): string {
  const rows: string[][] = [];
  const ms = (n: number) => `${n.toFixed(0)} ms`;
  for (const size of [1_000, 10_000, 50_000]) {
    const runs = size >= 50_000 ? 3 : 5;
    const parse = measure(size, "parse", runs);
    const load = measure(size, "validate", runs);
    const total = measure(size, "plan", runs);
    const share = (a: number, b: number) => `${(((a - b) / b) * 100).toFixed(0)}%`;
    rows.push([
      String(size),
      `${(parse.bytes / 1e6).toFixed(2)} MB`,
      `${ms(parse.warm)} / ${ms(parse.cold)}`,
      `${share(load.warm, parse.warm)} / ${share(load.cold, parse.cold)}`,
      `${ms(total.warm)} / ${ms(total.cold)}`,
      `${(total.peakRss / 1e6).toFixed(0)} MB`,
    ]);
  }
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
  ].join("\n");
}
