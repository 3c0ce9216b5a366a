/**
 * Runs a scenario (scenario-file.ts) locally, with the real Claude Code CLI (or the tests' stand-in
 * for it) against the scripted model: a repository holding the scenario's files, its graph, its
 * hooks (a third party committing to the target at a chosen moment), and after the run the
 * independent check of what the target took.
 * Shared by the local tests and `npm run bench:semantic` (whose stand-in half is scenario-standin.ts).
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { git } from "../src/attempt/git.ts";
import type { EngineEffect, RunState } from "../src/engine/types.ts";
import { parseGraph } from "../src/graph/load.ts";
import { runLocal } from "../src/local/run.ts";
import { buildPlan } from "../src/plan/plan.ts";
import { unitGatesNote } from "../src/plan/resolution.ts";
import { type Agent, scriptedRun } from "./local-run.ts";
import {
  brokenTrees,
  pristineTests,
  type RunSummary,
  summarize,
  unmet,
  weakenedTests,
} from "./scenario-check.ts";
import type { Scenario } from "./scenario-file.ts";
import { graphTaskId, scenarioGraph } from "./scenario-graph.ts";
import { WAIT_MS } from "./patience.ts";

export interface ScenarioOutcome {
  state: RunState;
  /** Where the target's history is (a repository, or the stand-in's bare one). */
  repo: string;
  /** The target's trees since the run started that fail the scenario's check. */
  broken: string[];
  /** The base's and the workstreams' test files gone from the target, or failing there as written. */
  weakened: string[];
  summary: RunSummary;
  /** What of the scenario's `expect` the run did not show (with verification on). */
  unmet: string[];
  ms: number;
}

type Hook = NonNullable<Scenario["hooks"]>[number];

/** The hooks due at a merge effect about to be carried out. */
export const dueBeforeMerge = (hooks: Hook[], workstream: string): Hook[] =>
  hooks.filter((h) => "before_merge" in h.at && h.at.before_merge === workstream);

/** The `after_merge` hooks the state now makes due: their task merged, or their workstream landed. */
export const dueAfterMerge = (s: Scenario, hooks: Hook[], state: RunState): Hook[] =>
  hooks.filter((h) => {
    if (!("after_merge" in h.at)) return false;
    const id = h.at.after_merge;
    return state.tasks[graphTaskId(s, id)]?.status === "merged" || state.workstreams[id]?.status === "merged";
  });

/** A person's commit on the target, in the checkout that has it (the repository itself). */
function commitAsPerson(repo: string, hook: Hook): void {
  for (const [path, text] of Object.entries(hook.push)) {
    const full = join(repo, path);
    if (text === null) rmSync(full, { force: true });
    else {
      mkdirSync(dirname(full), { recursive: true });
      writeFileSync(full, text);
    }
  }
  const env = {
    ...process.env,
    GIT_AUTHOR_NAME: "A Person",
    GIT_AUTHOR_EMAIL: "person@example.com",
    GIT_COMMITTER_NAME: "A Person",
    GIT_COMMITTER_EMAIL: "person@example.com",
  };
  execFileSync("git", ["add", "--all", "--", ...Object.keys(hook.push)], { cwd: repo, env });
  execFileSync("git", ["commit", "-q", "-m", hook.message ?? "A third party's change"], { cwd: repo, env });
}

/** A repository holding the scenario's files on `main`, and the commit they are in. */
export async function scenarioRepo(scenario: Scenario): Promise<{ repo: string; since: string }> {
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

/** What the independent check says of a finished run, and what of `expect` it missed. */
export async function judge(
  scenario: Scenario,
  state: RunState,
  repo: string,
  since: string,
  verify: boolean,
  started: number,
): Promise<ScenarioOutcome> {
  const summary = summarize(state);
  const broken = await brokenTrees(scenario, repo, since);
  const landed = Object.entries(state.workstreams).flatMap(([id, w]) => (w.status === "merged" ? [id] : []));
  const weakened = await weakenedTests(scenario, repo, await pristineTests(scenario), landed);
  const planNote = unitGatesNote(buildPlan(parseGraph("g.yaml", scenarioGraph(scenario, { verify }))));
  return {
    state,
    repo,
    broken,
    weakened,
    summary,
    unmet: verify ? unmet(scenario, summary, { broken, weakened, planNote }) : [],
    ms: Date.now() - started,
  };
}

export async function runScenarioLocally(
  scenario: Scenario,
  modelUrl: string,
  /** `agent`: the real Claude Code CLI unless told (the bench's runs are real ones). */
  options: { verify: boolean; agent?: Agent },
): Promise<ScenarioOutcome> {
  const started = Date.now();
  const { repo, since } = await scenarioRepo(scenario);
  const pending = [...(scenario.hooks ?? [])];
  const fire = (due: Hook[]) => {
    for (const hook of due) {
      pending.splice(pending.indexOf(hook), 1);
      commitAsPerson(repo, hook);
    }
  };
  const { state } = await runLocal({
    ...scriptedRun(
      repo,
      ".workflow/g.yaml",
      scenarioGraph(scenario, options),
      modelUrl,
      options.agent ?? "claude-code",
    ),
    attemptTimeoutMs: WAIT_MS,
    gateTimeoutMs: scenario.gate_timeout_seconds ? scenario.gate_timeout_seconds * 1000 : WAIT_MS,
    onState: (s) => fire(dueAfterMerge(scenario, pending, s)),
    beforeEffect: (effect: EngineEffect) => {
      if (effect.type === "merge_integration_pr") fire(dueBeforeMerge(pending, effect.workstream));
    },
  });
  return judge(scenario, state, repo, since, options.verify, started);
}
