/**
 * What the scenario tests assert of a finished run, locally and on the stand-in, and which scenarios
 * they run: by default a few of the built-in suite (bench/scenarios/; the real Claude Code CLI makes
 * each take seconds, and the whole suite runs in `npm run bench:semantic`);
 * `AGENTRELAY_SEMANTIC_SUITE=all` runs every one.
 */
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { expect } from "vitest";
import { REPO_ROOT } from "../../harness/paths.ts";
import { WAIT_MS } from "../../harness/patience.ts";
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

/** The built-in suite, as the scenario loader reads it. */
export const SCENARIOS: Scenario[] = readScenarios(BUILT_IN);

/** The built-in scenarios' gate: their test runner over tests/. */
export const GATE = "node test.js";

/** Whether `gate` passes in `dir`. */
export const passes = (dir: string, gate = GATE): boolean =>
  spawnSync("bash", ["-c", gate], { cwd: dir, stdio: "ignore", timeout: WAIT_MS }).status === 0;

/** What a workstream's tasks run, in order, as one command. */
export const editOf = (workstream: Scenario["workstreams"][number]): string =>
  workstream.tasks.map((t) => t.agent).join("\n");

/** A scenario whose repair changes what judges it (a test, the runner): a person is expected to decide. */
export const weakens = (s: Scenario): boolean => /changed what judges it/.test(s.expect?.reason ?? "");

/**
 * The pairs and triples that merge cleanly and break together under their own gate: no hooks, no
 * graph keys, no check of their own, no text conflict (text-and-semantic), run locally.
 */
export const SEMANTIC_PAIRS: Scenario[] = SCENARIOS.filter(
  (s) =>
    s.workstreams.length > 1 &&
    !s.hooks &&
    !s.graph &&
    !s.check.command &&
    s.where.includes("local") &&
    s.name !== "text-and-semantic",
);
