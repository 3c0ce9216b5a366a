/** `node bin/bench.js NAME`: runs one benchmark and prints its table. */
import { apiBudgetBench } from "./api-budget.ts";
import { cliStartup } from "./cli-startup.ts";
import { e2eBench } from "./e2e.ts";
import { engineBench } from "./engine.ts";
import { jobOverheadBench } from "./job-overhead.ts";
import { graphScale, graphScaleWorker } from "./graph-scale.ts";
import { githubLimitsBench } from "./github-limits.ts";
import { hostileGraphs } from "./hostile-graphs.ts";
import { sampleCostBench } from "./sample-cost.ts";
import { semanticBench } from "./semantic-verification.ts";
import { workflowModeBench } from "./workflow-mode.ts";

const BENCHES: Record<string, (args: string[]) => string | Promise<string>> = {
  "graph-scale": graphScale,
  "hostile-graphs": hostileGraphs,
  "cli-startup": cliStartup,
  engine: engineBench,
  "api-budget": apiBudgetBench,
  "job-overhead": jobOverheadBench,
  e2e: e2eBench,
  "workflow-mode": () => workflowModeBench(),
  "github-limits": githubLimitsBench,
  "sample-cost": sampleCostBench,
  semantic: semanticBench,
};

export async function main(argv: string[]): Promise<number> {
  if (argv[0] === "graph-scale-worker") {
    process.stdout.write(`${graphScaleWorker(argv.slice(1))}\n`);
    return 0;
  }
  // Options (`--scenarios DIR`) follow the names and go to each bench named.
  const first = argv.findIndex((a) => a.startsWith("--"));
  const named = first === -1 ? argv : argv.slice(0, first);
  const args = first === -1 ? [] : argv.slice(first);
  const names = named.length > 0 ? named : Object.keys(BENCHES);
  for (const name of names) {
    const bench = BENCHES[name];
    if (!bench) {
      process.stderr.write(`unknown bench '${name}'; known: ${Object.keys(BENCHES).join(", ")}\n`);
      return 2;
    }
    process.stdout.write(`## bench/${name}\n\n${await bench(args)}\n\n`);
  }
  return 0;
}
