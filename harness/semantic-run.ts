/**
 * Runs a semantic scenario (semantic-scenarios.ts) locally, with the real Claude Code CLI against the
 * scripted model: a repository with the scenario's files, its graph, and after the run the target's
 * history checked tree by tree. Shared by the local test and `npm run bench:semantic`.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { git } from "../src/attempt/git.ts";
import type { RunState } from "../src/engine/types.ts";
import { runLocal } from "../src/local/run.ts";
import { scriptedRun } from "./local-run.ts";
import { brokenOnTarget, scenarioGraph, type SemanticScenario } from "./semantic-scenarios.ts";
import { WAIT_MS } from "./patience.ts";

export interface ScenarioRun {
  state: RunState;
  repo: string;
  /** The target's commits since the run started whose tree fails the gate. */
  broken: string[];
  ms: number;
}

/** A repository holding the scenario's files on `main`, and the commit they are in. */
export async function scenarioRepo(scenario: SemanticScenario): Promise<{ repo: string; since: string }> {
  const repo = mkdtempSync(join(tmpdir(), `agentrelay-${scenario.name}-`));
  await git(repo, ["init", "-q", "-b", "main"]);
  for (const [path, text] of Object.entries(scenario.files)) {
    mkdirSync(dirname(join(repo, path)), { recursive: true });
    writeFileSync(join(repo, path), text);
  }
  await git(repo, ["add", "--all"]);
  await git(repo, ["commit", "-q", "-m", `${scenario.name}: the code before the run`]);
  return { repo, since: await git(repo, ["rev-parse", "HEAD"]) };
}

export async function runScenarioLocally(
  scenario: SemanticScenario,
  modelUrl: string,
  options: { verify: boolean },
): Promise<ScenarioRun> {
  const started = Date.now();
  const { repo, since } = await scenarioRepo(scenario);
  const { state } = await runLocal({
    ...scriptedRun(repo, ".workflow/g.yaml", scenarioGraph(scenario, options), modelUrl),
    attemptTimeoutMs: WAIT_MS,
    gateTimeoutMs: WAIT_MS,
  });
  return { state, repo, broken: await brokenOnTarget(repo, since), ms: Date.now() - started };
}
