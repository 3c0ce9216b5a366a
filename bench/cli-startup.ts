/**
 * bench/cli-startup: the command line as people run it, whole processes, median of repeated runs.
 * Targets: `agentrelay validate` of the demo graph under 120 ms; `agentrelay plan --json` of a
 * 10,000-task graph at most a fifteenth of agentrelay's own Python builder on the same file.
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

/** Wall time of a whole process, in ms, median of `runs` after one warm-up (the file cache). */
function median(command: string, args: string[], runs: number, env?: NodeJS.ProcessEnv): number {
  const times: number[] = [];
  for (let i = 0; i <= runs; i++) {
    const start = process.hrtime.bigint();
    execFileSync(command, args, { stdio: "ignore", env: env ?? process.env });
    if (i > 0) times.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)]!;
}

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

  const bare = median(process.execPath, ["-e", "0"], 15);
  row("node -e 0 (bare start)", bare);
  const validate = median(process.execPath, [CLI, "validate", demo], 15);
  row("agentrelay validate examples/demo.yaml", validate, "target: under 120 ms");
  const plan = median(process.execPath, [CLI, "plan", big, "--json"], 9);
  row("agentrelay plan --json (10,000 tasks)", plan);

  const src = process.env.AGENTRELAY_PYTHON_SRC;
  if (src && existsSync(join(src, "agentrelay"))) {
    const python = median("python3", ["-c", PYTHON_BUILDER, big], 3, { ...process.env, PYTHONPATH: src });
    row(
      "agentrelay's Python builder (same file)",
      python,
      `${(python / plan).toFixed(1)} times our plan (target: 15)`,
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
    "Whole processes as a shell starts them, median of repeated runs (after one run that warms the file cache).",
  ].join("\n");
}
