/**
 * A run's spend is read from its records (attempts, resolutions, repairs, and what a reset or a changed
 * graph cleared from them), never from a stored total that disagrees (security case 79): a state whose
 * total was edited by hand is read the same by `status` and `run`, and as its records say. Runs stored
 * in dollars, and runs whose graph dropped a task that had spent, still load with what they spent.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { createEngine } from "../../src/engine/engine.ts";
import { settleSpend } from "../../src/engine/budget.ts";
import { resumeRun } from "../../src/engine/resume.ts";
import type { AttemptRecord, RunState } from "../../src/engine/types.ts";
import { parseGraph } from "../../src/graph/load.ts";
import { GitRefStateStore } from "../../src/local/git-store.ts";
import { HOSTED_PER_TASK, splitState, stateOfParts } from "../../src/protocol/state-layout.ts";
import { BIN } from "../support/cli.ts";
import { tempRepo } from "../support/git.ts";
import { graphYaml } from "../support/graphs.ts";
import { WAIT_MS } from "../../harness/patience.ts";

const agentrelay = (...args: string[]) => {
  const result = spawnSync(process.execPath, [BIN, ...args], { encoding: "utf8", timeout: WAIT_MS });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
};

const failedAttempt = (costMicros: number): AttemptRecord => ({
  n: 1,
  dispatchedAt: 1,
  deadline: 2,
  startedAt: 1,
  outcome: "failed",
  reason: "it failed",
  costMicros,
  turns: 1,
  pushedSha: null,
  gates: [],
});

/**
 * A repository and a run of a $1 graph whose task `one` has one failed attempt that cost `recorded`,
 * stored with a run total of `stored` (an edit by hand when the two differ).
 */
async function stored(recorded: number, total: number, head = "max_cost_usd: 1") {
  const repo = await tempRepo();
  const file = join(mkdtempSync(join(tmpdir(), "agentrelay-graph-")), "g.yaml");
  const text = graphYaml([{ id: "one" }, { id: "two" }], undefined, head);
  writeFileSync(file, text);
  const { state } = createEngine(parseGraph(file, text)).start(Date.now());
  Object.assign(state.tasks.one!, { attempt: 1, attempts: [failedAttempt(recorded)] });
  const spend = { spentMicros: total, reservedMicros: 0, raisedMicros: 0 };
  state.budget = { run: spend, holding: 0, workstreams: { default: { ...spend } }, raises: [], spent: {} };
  const store = new GitRefStateStore(repo);
  await store.compareAndSwap("g/1", null, state);
  return { repo, file, text, store };
}

describe("a stored spend that disagrees with its records", () => {
  it("is read as the records say by status and run: less stored than spent holds the run", async () => {
    // $0.006 stored over an attempt that cost $1,000,000: before, status said $0.006 and run spent on.
    const { repo, file } = await stored(1_000_000_000_000, 6_000);
    const status = agentrelay("status", file, "--repo", repo);
    expect(status.stderr).toBe("");
    expect(status.stdout).toContain("Spent $1,000,000.00 of $1.00");
    expect(status.stdout).not.toContain("$0.006");
    const run = agentrelay("run", file, "--repo", repo, "--scripted-model");
    expect(run.stderr).toBe("");
    expect(run.code).toBe(3); // waits for a budget: nothing dispatched
    expect(run.stdout).toContain("budget spent: $1,000,000.00 of $1.00 for the run");
    const after = (await new GitRefStateStore(repo).load("g/1"))!.state;
    expect(after.tasks.one!.attempts).toHaveLength(1);
    expect(after.budget!.run.spentMicros).toBe(1_000_000_000_000);
  });

  it("is read as the records say: more stored than spent is not believed", async () => {
    // $1,000,000 stored over an attempt that cost $0.006.
    const { repo, file, store } = await stored(6_000, 1_000_000_000_000);
    const status = agentrelay("status", file, "--repo", repo);
    expect(status.stderr).toBe("");
    expect(status.stdout).toContain("Spent $0.006 of $1.00");
    expect(status.stdout).not.toContain("1,000,000");
    expect((await store.load("g/1"))!.state.budget!.run.spentMicros).toBe(6_000);
  });

  it("in dollars, from before micro-dollars, loads and agrees", async () => {
    const { repo, store } = await stored(6_000, 6_000);
    // Rewrite the run as that version stored it: dollar amounts under their old names.
    const old = (await store.load("g/1"))!;
    const state = structuredClone(old.state) as unknown as Record<string, unknown> & RunState;
    const attempt = state.tasks.one!.attempts[0]! as unknown as Record<string, unknown>;
    delete attempt.costMicros;
    attempt.costUsd = 0.006;
    const run = state.budget!.run as unknown as Record<string, unknown>;
    delete run.spentMicros;
    Object.assign(run, { spentUsd: 0.006 });
    delete state.budget!.clearedMicros;
    await store.compareAndSwap("g/1", old.version, state);
    const loaded = (await new GitRefStateStore(repo).load("g/1"))!.state;
    expect(loaded.budget!.run.spentMicros).toBe(6_000);
    expect(loaded.tasks.one!.attempts[0]!.costMicros).toBe(6_000);
  });

  it("whose graph dropped a task that had spent keeps that spend, cleared, across a write", async () => {
    const { repo, file, store } = await stored(6_000, 6_000);
    const previous = (await store.load("g/1"))!;
    const text = graphYaml([{ id: "two" }], undefined, "max_cost_usd: 1");
    const graph = parseGraph(file, text);
    const { state, drift } = resumeRun(createEngine(graph), graph, previous.state, Date.now());
    expect(drift).toContain("task 'one' was removed from the graph (it was pending)");
    expect(state.budget!.clearedMicros).toBe(6_000);
    await store.compareAndSwap("g/1", previous.version, state);
    const loaded = (await new GitRefStateStore(repo).load("g/1"))!.state;
    expect(loaded.budget!.run.spentMicros).toBe(6_000);
  });

  it("is read as the records say by the app's and the task Action's reader too", async () => {
    const { store } = await stored(6_000, 1_000_000_000_000);
    const state = structuredClone((await store.load("g/1"))!.state);
    state.budget!.run.spentMicros = 1_000_000_000_000; // as stored, before the local reader settled it
    const parts = splitState(state, HOSTED_PER_TASK, 1);
    const read = stateOfParts<RunState>(
      {
        buckets: 1,
        index: parts.index,
        bucketTexts: [parts.buckets.get(0)!],
        graphText: null,
        graphKey: null,
      },
      HOSTED_PER_TASK,
    );
    expect(read.budget!.run.spentMicros).toBe(6_000);
  });

  it("keeps what a reset cleared (its PR's conflict resolutions) spent", () => {
    const text = graphYaml([{ id: "one" }, { id: "two" }], undefined, "max_cost_usd: 1");
    const engine = createEngine(parseGraph("g.yaml", text));
    const { state } = engine.start(1);
    const resolution = {
      n: 1,
      dispatchedAt: 1,
      outcome: "failed" as const,
      reason: "x",
      costMicros: 7_000,
      turns: 1,
    };
    Object.assign(state.tasks.one!, {
      status: "pr_open",
      conflict: { files: ["x"], resolutions: [resolution] },
    });
    const spend = { spentMicros: 7_000, reservedMicros: 0, raisedMicros: 0 };
    state.budget = { run: spend, holding: 0, workstreams: {}, raises: [], spent: {}, clearedMicros: 0 };
    engine.apply(state, { type: "command", command: "reset", task: "one", at: 2 });
    expect(state.tasks.one!.conflict).toBeUndefined();
    expect(settleSpend(state)).toBeNull();
    expect(state.budget.run.spentMicros).toBe(7_000);
  });
});
