/**
 * bench/semantic: the semantic scenario suite (harness/semantic-scenarios.ts: workstreams that merge
 * cleanly but break together) with verification on and off, locally and on the stand-in, with the real
 * Claude Code CLI against the scripted model. After each run the target's history is tested tree by
 * tree: `broken on target` counts the trees that fail the gate, over all scenarios of a row, and
 * `weakened tests on target` the test files that reached the target and are gone from it or fail run
 * on their own (a repair that deleted a test or neutered the runner would pass the gate).
 */
import { runScenarioLocally } from "../harness/semantic-run.ts";
import {
  brokenOnTarget,
  SCENARIOS,
  scenarioAgent,
  scenarioGraph,
  type SemanticScenario,
  weakenedOnTarget,
} from "../harness/semantic-scenarios.ts";
import { startStandin } from "../harness/standin.ts";
import type { RunState } from "../src/engine/types.ts";
import { startScriptedModel } from "../src/scripted/model-server.ts";
import { table } from "./table.ts";

interface Outcome {
  state: RunState | null;
  broken: string[];
  /** Test files that reached the target and are gone from it, or fail on their own (weakenedOnTarget). */
  weakened?: string[];
  /** Why the scenario could not run to its end (the machine, not the engine). */
  error?: string;
}

/** Runs `work` over the scenarios, `width` at a time. */
async function pooled(
  scenarios: SemanticScenario[],
  width: number,
  work: (s: SemanticScenario) => Promise<Outcome>,
): Promise<Outcome[]> {
  const results: Outcome[] = [];
  const queue = [...scenarios];
  await Promise.all(
    Array.from({ length: width }, async () => {
      for (let s = queue.shift(); s; s = queue.shift())
        results.push(
          await work(s).catch((error: unknown) => ({
            state: null,
            broken: [],
            error: `${s.name}: ${String(error)}`,
          })),
        );
    }),
  );
  return results;
}

async function onStandin(scenario: SemanticScenario, verify: boolean): Promise<Outcome> {
  const standin = await startStandin({ script: scenarioAgent([scenario]) });
  try {
    const since = standin.gh.branches.get("main")!;
    const graph = scenarioGraph(scenario, { verify });
    await standin.push({ ...scenario.files, [`.workflow/${scenario.name}.yaml`]: graph });
    await standin.idle(600_000);
    const state = standin.gh.state(`${scenario.name}/1`) as unknown as RunState;
    return {
      state,
      broken: await brokenOnTarget(standin.bare, since),
      weakened: await weakenedOnTarget(standin.bare),
    };
  } finally {
    await standin.close();
  }
}

export async function semanticBench(): Promise<string> {
  const model = await startScriptedModel(scenarioAgent());
  const rows: string[][] = [];
  /** Why each integration PR left open at a run's end waits: the unrepairable scenario's, or another cause. */
  const waiting: string[] = [];
  // SEMANTIC_WHERE=local or stand-in runs one half (the stand-in's jobs take minutes on a loaded machine).
  const places = (["local", "stand-in"] as const).filter((w) =>
    [w, undefined].includes(process.env.SEMANTIC_WHERE as never),
  );
  try {
    for (const where of places)
      for (const verify of [true, false]) {
        const started = performance.now();
        const outcomes = await pooled(SCENARIOS, where === "local" ? 4 : 3, (s) =>
          where === "local"
            ? runScenarioLocally(s, model.url, { verify }).then(async (o) => ({
                ...o,
                weakened: await weakenedOnTarget(o.repo),
              }))
            : onStandin(s, verify),
        );
        const landings = outcomes.flatMap((o) => Object.values(o.state?.workstreams ?? {}));
        for (const o of outcomes)
          for (const [id, w] of Object.entries(o.state?.workstreams ?? {}))
            if (w.status === "pr_open")
              waiting.push(
                `- ${where}, ${verify ? "on" : "off"}: ${o.state!.graph}/${id}: ${(w.reason ?? "").slice(0, 320)}`,
              );
        const repairs = landings.flatMap((w) => w.verification?.repairs ?? []);
        rows.push([
          verify ? "verification on" : "off",
          where,
          String(outcomes.length),
          String(outcomes.reduce((n, o) => n + o.broken.length, 0)),
          String(outcomes.filter((o) => o.broken.length > 0).length),
          String(outcomes.reduce((n, o) => n + (o.weakened?.length ?? 0), 0)),
          String(landings.reduce((n, w) => n + (w.verification?.runs.length ?? 0), 0)),
          `${repairs.filter((r) => r.outcome === "succeeded").length} of ${repairs.length}`,
          String(outcomes.filter((o) => o.state && o.state.outcome === null).length),
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
      "scenarios",
      "broken on target",
      "scenarios broken",
      "weakened tests on target",
      "verifications",
      "repairs that fixed it",
      "waiting for a person",
      "wall time",
      "could not run",
    ],
    rows,
  );
  return waiting.length ? `${table_}\n\nWaiting for a person:\n${waiting.join("\n")}` : table_;
}
