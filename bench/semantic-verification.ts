/**
 * bench/semantic: a folder of scenarios (docs/scenarios.md; the built-in suite is bench/scenarios/,
 * `--scenarios DIR` names another) run with verification on and off, locally and on the stand-in,
 * with the real Claude Code CLI against the scripted model. After each run the independent check
 * (harness/scenario-check.ts) judges the target: `broken on target` counts the trees it took that fail
 * the scenario's own check, `weakened tests on target` the test files the base and the workstreams
 * wrote that are gone from it or fail there as written; `unexpected` what a scenario's `expect` says
 * and the run did not show. `SEMANTIC_WHERE=local|stand-in` and `SEMANTIC_VERIFY=on|off` run one half;
 * `--only a,b` some scenarios.
 */
import { join } from "node:path";
import { REPO_ROOT } from "../harness/paths.ts";
import { type Scenario, readScenarios, ScenarioError } from "../harness/scenario-file.ts";
import { scenarioAgent } from "../harness/scenario-graph.ts";
import { runScenarioOnStandin } from "../harness/scenario-standin.ts";
import { runScenarioLocally, type ScenarioOutcome } from "../harness/semantic-run.ts";
import { startScriptedModel } from "../src/scripted/model-server.ts";
import { table } from "./table.ts";

type Outcome = Partial<ScenarioOutcome> & { scenario: Scenario; error?: string };

/** Runs `work` over the items, `width` at a time. */
async function pooled<T, R>(items: T[], width: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = [];
  const queue = [...items];
  await Promise.all(
    Array.from({ length: width }, async () => {
      for (let item = queue.shift(); item !== undefined; item = queue.shift()) results.push(await work(item));
    }),
  );
  return results;
}

/** `--scenarios DIR` and `--only a,b` from the bench's arguments. */
function options(args: string[]): { dir: string; only: string[] | null } {
  const value = (flag: string) => {
    const i = args.indexOf(flag);
    return i === -1 ? undefined : args[i + 1];
  };
  const only = value("--only");
  return {
    dir: value("--scenarios") ?? join(REPO_ROOT, "bench/scenarios"),
    only: only ? only.split(",") : null,
  };
}

const sum = (outcomes: Outcome[], f: (o: Outcome) => number) => outcomes.reduce((n, o) => n + f(o), 0);

export async function semanticBench(args: string[] = []): Promise<string> {
  const { dir, only } = options(args);
  let scenarios: Scenario[];
  try {
    scenarios = readScenarios(dir).filter((s) => !only || only.includes(s.name));
  } catch (error) {
    if (error instanceof ScenarioError) return `could not read the scenarios: ${error.message}`;
    throw error;
  }
  const model = await startScriptedModel(scenarioAgent(scenarios));
  const rows: string[][] = [];
  const notes: string[] = [];
  const places = (["local", "stand-in"] as const).filter((w) =>
    [w, undefined].includes(process.env.SEMANTIC_WHERE as never),
  );
  const modes = [true, false].filter((v) =>
    [v ? "on" : "off", undefined].includes(process.env.SEMANTIC_VERIFY as never),
  );
  // The machine is shared: two scenarios at a time unless told otherwise.
  const width = Number(process.env.SEMANTIC_WIDTH ?? 2);
  try {
    for (const where of places)
      for (const verify of modes) {
        const started = performance.now();
        const runs = scenarios
          .filter((s) => s.where.includes(where))
          .flatMap((s) => Array.from({ length: s.runs }, () => s));
        if (runs.length === 0) continue;
        const outcomes = await pooled(runs, width, (s): Promise<Outcome> => {
          const run =
            where === "local"
              ? runScenarioLocally(s, model.url, { verify })
              : runScenarioOnStandin(s, { verify });
          return run.then(
            (o) => ({ ...o, scenario: s }),
            (error: unknown) => ({ scenario: s, error: `${s.name}: ${String(error)}` }),
          );
        });
        const mode = verify ? "on" : "off";
        for (const o of outcomes) {
          for (const line of o.summary?.waiting ?? [])
            notes.push(`- ${where}, ${mode}: waiting: ${line.slice(0, 320)}`);
          // A break the scenario means to land (no gate of its graph sees it) is said as such.
          const meant =
            verify && o.scenario.expect?.broken ? " (expected: no gate of its graph sees it)" : "";
          for (const line of o.broken ?? [])
            notes.push(`- ${where}, ${mode}: ${o.scenario.name}: broken on the target: ${line}${meant}`);
          for (const line of o.weakened ?? [])
            notes.push(`- ${where}, ${mode}: ${o.scenario.name}: weakened on the target: ${line}`);
          // A run that spent far more than its agents' few turns (a repair charged its whole cap, say).
          if ((o.summary?.costUsd ?? 0) > 0.25)
            notes.push(`- ${where}, ${mode}: ${o.scenario.name}: spent $${o.summary!.costUsd.toFixed(2)}`);
          for (const line of o.unmet ?? [])
            notes.push(`- ${where}, ${mode}: ${o.scenario.name}: unexpected: ${line}`);
        }
        const fixed = sum(outcomes, (o) => o.summary?.repairsFixed ?? 0);
        rows.push([
          verify ? "verification on" : "off",
          where,
          String(outcomes.length),
          String(sum(outcomes, (o) => o.broken?.length ?? 0)),
          String(outcomes.filter((o) => (o.broken?.length ?? 0) > 0).length),
          String(sum(outcomes, (o) => o.weakened?.length ?? 0)),
          String(sum(outcomes, (o) => o.summary?.flaky ?? 0)),
          String(sum(outcomes, (o) => o.summary?.timedOut ?? 0)),
          String(sum(outcomes, (o) => o.summary?.verifications ?? 0)),
          `${fixed} of ${sum(outcomes, (o) => o.summary?.repairs ?? 0)}`,
          String(sum(outcomes, (o) => o.summary?.toPerson ?? 0)),
          `$${sum(outcomes, (o) => o.summary?.costUsd ?? 0).toFixed(2)}`,
          String(outcomes.filter((o) => (o.unmet?.length ?? 0) > 0).length),
          `${((performance.now() - started) / 1000).toFixed(0)} s`,
          outcomes.flatMap((o) => (o.error ? [o.error.slice(0, 120)] : [])).join("; ") || "none",
        ]);
      }
  } finally {
    await model.close();
  }
  const table_ = table(
    [
      "mode",
      "where",
      "runs",
      "broken on target",
      "runs broken",
      "weakened tests on target",
      "flaky",
      "timed out",
      "verifications",
      "repairs that fixed it",
      "waiting for a person",
      "cost",
      "unexpected",
      "wall time",
      "could not run",
    ],
    rows,
  );
  return notes.length ? `${table_}\n\n${notes.join("\n")}` : table_;
}
