/**
 * bench/graph-scale: load + validate + plan time and peak memory for generated graphs of 1k, 10k and
 * 50k tasks. Target: 10,000 tasks (about 1.4 MB of YAML) in under 250 ms, with validation adding at
 * most a quarter to the raw YAML parse time.
 */
import { parseGraph } from "../src/graph/load.ts";
import { loadYaml } from "../src/graph/yaml.ts";
import { buildPlan } from "../src/plan/plan.ts";
import { table } from "./table.ts";

/** A graph shaped like real ones: lanes of 100 tasks, each task depending on its predecessor and one 7 back. */
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
      `    workstream_id: ws_${i % lanes}`,
      "    role: implementer",
      `    description: Implement module ${i} of the generated graph with its tests.`,
      `    dependencies: [${deps.join(", ")}]`,
      `    completion_gate: pytest -q tests/test_${i}.py`,
    );
  }
  return `${out.join("\n")}\n`;
}

function median(samples: number[]): number {
  const s = [...samples].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

function time(fn: () => void, runs: number): number {
  fn();
  const samples: number[] = [];
  for (let i = 0; i < runs; i++) {
    const start = performance.now();
    fn();
    samples.push(performance.now() - start);
  }
  return median(samples);
}

export function graphScale(): string {
  const rows: string[][] = [];
  for (const size of [1_000, 10_000, 50_000]) {
    const text = generateGraph(size);
    const runs = size >= 50_000 ? 3 : 7;
    const parse = time(() => loadYaml("scale.yaml", text, { maxBytes: 64 << 20, maxExpandedNodes: 10_000_000, maxDepth: 64 }), runs);
    const limits = { limits: { maxBytes: 64 << 20 } };
    const load = time(() => parseGraph("scale.yaml", text, limits), runs);
    const total = time(() => buildPlan(parseGraph("scale.yaml", text, limits)), runs);
    globalThis.gc?.();
    const before = process.memoryUsage().heapUsed;
    const plan = buildPlan(parseGraph("scale.yaml", text, limits));
    const retained = process.memoryUsage().heapUsed - before;
    rows.push([
      String(size),
      `${(text.length / 1e6).toFixed(2)} MB`,
      `${parse.toFixed(1)} ms`,
      `${(load - parse).toFixed(1)} ms (${(((load - parse) / parse) * 100).toFixed(0)}%)`,
      `${(total - load).toFixed(1)} ms`,
      `${total.toFixed(1)} ms`,
      `${(retained / 1e6).toFixed(1)} MB`,
      `${(process.memoryUsage().rss / 1e6).toFixed(0)} MB`,
    ]);
    void plan;
  }
  return table(
    ["tasks", "YAML", "parse (raw)", "validate (+% of parse)", "plan", "load+validate+plan", "graph+plan heap", "peak RSS"],
    rows,
  );
}
