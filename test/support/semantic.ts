/**
 * What the scenario tests assert of a finished run, locally and on the stand-in, and which scenarios
 * they run: by default a few of the built-in suite (bench/scenarios/; the real Claude Code CLI makes
 * each take seconds, and the whole suite runs in `npm run bench:semantic`);
 * `AGENTRELAY_SEMANTIC_SUITE=all` runs every one.
 */
import { join } from "node:path";
import { expect } from "vitest";
import { REPO_ROOT } from "../../harness/paths.ts";
import { readScenarios, type Scenario } from "../../harness/scenario-file.ts";
import type { ScenarioOutcome } from "../../harness/semantic-run.ts";

export const BUILT_IN = join(REPO_ROOT, "bench/scenarios");

/** The scenarios to run `where`: every one with AGENTRELAY_SEMANTIC_SUITE=all, else those named. */
export const scenariosToRun = (names: string[], where: "local" | "stand-in"): Scenario[] =>
  readScenarios(BUILT_IN).filter(
    (s) =>
      s.where.includes(where) && (process.env.AGENTRELAY_SEMANTIC_SUITE === "all" || names.includes(s.name)),
  );

/**
 * What every scenario holds with verification on: the independent check finds no weakened test on the
 * target, no broken tree (but those a scenario expects: a break no gate of its graph sees), and the
 * run showed what the scenario expects.
 */
export function expectHeld(outcome: ScenarioOutcome): void {
  expect(outcome.weakened).toEqual([]);
  expect(outcome.unmet).toEqual([]);
}
