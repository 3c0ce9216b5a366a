/**
 * bench/hostile-graphs: graph files shaped to make a careless loader superlinear. Graph files are
 * untrusted and the app is shared by every installation, so each must load and plan (or be rejected)
 * in time and memory that grow with the file: under 8 MB, the loader's limit, none may take more than a
 * few seconds.
 */
import { GraphError } from "../src/graph/errors.ts";
import { parseGraph } from "../src/graph/load.ts";
import { buildPlan } from "../src/plan/plan.ts";
import { table } from "./table.ts";

const ids = (prefix: string, count: number) => Array.from({ length: count }, (_, i) => `${prefix}${i}`);
const lines = (items: string[]) => `${items.join("\n")}\n`;

/** Each shape: what a careless loader did with it, and the file. */
const SHAPES: { shape: string; before: string; text: () => string }[] = [
  {
    shape: "one mapping of 500,000 keys",
    before: "duplicate keys found by a scan: 40,000 keys took 7 s",
    text: () => lines(ids("k", 500_000).map((k) => `${k}: 0`)),
  },
  {
    shape: "one task with 19,999 dependencies (a graph holds 20,000 tasks at most)",
    before: "repeated dependencies found by a scan: quadratic",
    text: () =>
      `name: h\ntasks:\n  - id: a\n    description: x\n    dependencies: [${ids("d", 19_999).join(", ")}]\n` +
      lines(ids("d", 19_999).map((d) => `  - {id: ${d}, description: x}`)),
  },
  {
    shape: "a chain of 20,000 tasks, each with inputs_from",
    before: "a set of ancestors kept per task: 3,000 tasks took 2 s and 240 MB",
    text: () =>
      `name: h\ntasks:\n${lines(ids("t", 20_000).map((t, i) => `  - {id: ${t}, description: x${i ? `, dependencies: [t${i - 1}], inputs_from: {task: t0}` : ""}}`))}`,
  },
  {
    shape: "a chain of 20,000 workstreams",
    before: "parent chains searched per workstream: 4,000 took 28 s; a recursive search crashed",
    text: () =>
      `name: h\nmax_workstream_depth: 30000\nworkstreams:\n${lines(ids("w", 20_000).map((w, i) => `  - {id: ${w}${i ? `, parent_workstream_id: w${i - 1}` : ""}}`))}tasks:\n${lines(ids("t", 20_000).map((t, i) => `  - {id: ${t}, description: x, workstream_id: w${i}}`))}`,
  },
  {
    shape: "a task depending on 19,999 workstreams",
    before: "its upstream workstreams listed by copying: 20,000 took 3 s to plan",
    text: () =>
      `name: h\nworkstreams:\n${lines(ids("w", 20_000).map((w) => `  - {id: ${w}}`))}tasks:\n${lines(ids("t", 19_999).map((t, i) => `  - {id: ${t}, description: x, workstream_id: w${i}}`))}  - {id: last, description: x, workstream_id: w19999, dependencies: [${ids("t", 19_999).join(", ")}]}\n`,
  },
  {
    shape: "8 MB of 229,717 tasks, under the size limit",
    before: "planned and started: the app answered the push after 10.5 s, over GitHub's 10 s, at 1.42 GB",
    text: () => `name: h\ntasks:\n${lines(ids("t", 229_717).map((t) => `  - {id: ${t}, description: x}`))}`,
  },
];

export function hostileGraphs(): string {
  const rows = SHAPES.map(({ shape, before, text: make }) => {
    const text = make();
    globalThis.gc?.();
    const start = performance.now();
    let outcome = "planned";
    try {
      buildPlan(parseGraph("hostile.yaml", text, { limits: { maxBytes: 8 << 20 } }));
    } catch (error) {
      if (!(error instanceof GraphError)) throw error;
      outcome = `rejected (${error.issues.length} problem${error.issues.length > 1 ? "s" : ""})`;
    }
    const ms = performance.now() - start;
    return [
      shape,
      `${(Buffer.byteLength(text) / 1e6).toFixed(1)} MB`,
      `${ms.toFixed(0)} ms`,
      outcome,
      before,
    ];
  });
  return table(["file", "size", "load+plan", "outcome", "before"], rows);
}
