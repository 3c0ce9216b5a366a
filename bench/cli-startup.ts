/**
 * bench/cli-startup: the command line as people run it, whole processes, each timed beside its floor.
 * Targets: `agentrelay validate` of the demo graph at most 1.5 times a bare `node -e 0`; `agentrelay
 * plan --json` of a 10,000-task graph at most 1.5 times parsing the same file with js-yaml alone; and
 * at most a fifteenth of agentrelay's own Python builder on the same file.
 *
 * A ratio is the median over pairs run one right after the other (the command, then its floor), so
 * that other work on the machine weighs on both sides of each pair alike.
 *
 * The Python builder is agentrelay's `TaskGraphBuilder.from_yaml`, run from a checkout of
 * duanegoodner/agentrelay named by AGENTRELAY_PYTHON_SRC (its `src` folder; Python 3 with PyYAML),
 * never copied here; without it that row says how to get it.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { generateGraph } from "./graph-scale.ts";
import { table } from "./table.ts";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const CLI = join(ROOT, "bin/agentrelay.js");

/** Wall time of one whole process, in ms. */
function timed(command: string, args: string[], env?: NodeJS.ProcessEnv): number {
  const start = process.hrtime.bigint();
  execFileSync(command, args, { stdio: "ignore", cwd: ROOT, env: env ?? process.env });
  return Number(process.hrtime.bigint() - start) / 1e6;
}

const middle = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/** Wall time of a whole process, in ms, median of `runs` after one warm-up (the file cache). */
function median(command: string, args: string[], runs: number, env?: NodeJS.ProcessEnv): number {
  timed(command, args, env);
  return middle(Array.from({ length: runs }, () => timed(command, args, env)));
}

/** `command` against `floor` in `pairs` pairs after one warm-up of each: both medians and the median ratio. */
function paired(command: string[], floor: string[], pairs: number) {
  timed(process.execPath, command);
  timed(process.execPath, floor);
  const times = Array.from({ length: pairs }, () => ({
    command: timed(process.execPath, command),
    floor: timed(process.execPath, floor),
  }));
  return {
    command: middle(times.map((t) => t.command)),
    floor: middle(times.map((t) => t.floor)),
    ratio: middle(times.map((t) => t.command / t.floor)),
  };
}

/** js-yaml's parse of a file and nothing else: the least any loader of it can take. */
const YAML_FLOOR = [
  "--input-type=module",
  "-e",
  "import { load } from 'js-yaml'; import { readFileSync } from 'node:fs'; load(readFileSync(process.argv[1], 'utf8'));",
];

const PYTHON_BUILDER = [
  "import sys",
  "from pathlib import Path",
  "from agentrelay.task_graph.builder import TaskGraphBuilder",
  "TaskGraphBuilder.from_yaml(Path(sys.argv[1]))",
].join("\n");

export function cliStartup(): string {
  const dir = mkdtempSync(join(tmpdir(), "agentrelay-cli-"));
  // agentrelay's schema reads operational keys (max_concurrency) outside it: leave them out for both.
  const big = join(dir, "scale-10000.yaml");
  writeFileSync(big, generateGraph(10_000).replace(/^max_concurrency: .*\n/m, ""));
  const demo = join(ROOT, "examples/demo.yaml");
  const rows: string[][] = [];
  const row = (what: string, ms: number, note = "") => rows.push([what, `${Math.round(ms)} ms`, note]);

  const ratio = (r: number) => `${r.toFixed(2)} times the floor (target: at most 1.5)`;
  const validate = paired([CLI, "validate", demo], ["-e", "0"], 21);
  row("node -e 0 (bare start)", validate.floor);
  row("agentrelay validate examples/demo.yaml", validate.command, ratio(validate.ratio));
  const plan = paired([CLI, "plan", big, "--json"], [...YAML_FLOOR, big], 11);
  row("js-yaml's parse alone (10,000 tasks)", plan.floor);
  row("agentrelay plan --json (10,000 tasks)", plan.command, ratio(plan.ratio));

  const src = process.env.AGENTRELAY_PYTHON_SRC;
  if (src && existsSync(join(src, "agentrelay"))) {
    const python = median("python3", ["-c", PYTHON_BUILDER, big], 3, { ...process.env, PYTHONPATH: src });
    row(
      "agentrelay's Python builder (same file)",
      python,
      `${(python / plan.command).toFixed(1)} times our plan (target: 15)`,
    );
  } else {
    rows.push([
      "agentrelay's Python builder (same file)",
      "not run",
      "set AGENTRELAY_PYTHON_SRC to the src/ of a duanegoodner/agentrelay checkout",
    ]);
  }
  return [
    table(["process", "median", "note"], rows),
    "",
    "Whole processes as a shell starts them (bin/agentrelay.js: lib/ once built, else dist/cli/), each after one run that warms the file cache; a ratio is the median of pairs, each command run right before its floor.",
  ].join("\n");
}
