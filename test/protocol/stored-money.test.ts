/**
 * Money from before micro-dollars: runs stored in dollars load in micro-dollars (exactly, or as one
 * line of damage), a report from an older Action is read, and fingerprints of budgeted graphs stay as
 * they were, so that such runs resume without drift.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { createEngine, graphFingerprint, taskFingerprint } from "../../src/engine/engine.ts";
import { resumeRun } from "../../src/engine/resume.ts";
import type { RunState } from "../../src/engine/types.ts";
import { parseGraph } from "../../src/graph/load.ts";
import { attemptReportSchema, eventsOfReport } from "../../src/protocol/report.ts";
import { StateDamageError } from "../../src/protocol/state-check.ts";
import { joinState, LOCAL_PER_TASK } from "../../src/protocol/state-layout.ts";

const stored = JSON.parse(
  readFileSync(join(import.meta.dirname, "fixtures", "run-stored-in-dollars.json"), "utf8"),
) as { graph: string; index: string; buckets: string[] };

const load = (index = stored.index, buckets = stored.buckets) =>
  joinState<RunState>(index, buckets, LOCAL_PER_TASK);

/** The index with one budget field replaced, as damage would leave it. */
const withRunBudget = (field: string, value: unknown) => {
  const index = JSON.parse(stored.index) as { budget: { run: Record<string, unknown> } };
  index.budget.run[field] = value;
  return JSON.stringify(index);
};

describe("a run stored in dollars", () => {
  it("loads in micro-dollars, each amount exactly as that version counted it", () => {
    const state = load();
    expect(state.budget!.run).toEqual({ spentMicros: 617_285, reservedMicros: 0, raisedMicros: 100_000 });
    expect(state.budget!.workstreams).toEqual({
      left: { spentMicros: 246_914, reservedMicros: 0, raisedMicros: 0 },
      right: { spentMicros: 370_371, reservedMicros: 0, raisedMicros: 0 },
    });
    const a = state.tasks.a!;
    expect(a.attempts.map((t) => [t.costMicros, t.capMicros])).toEqual([
      [123_457, 650_000],
      [123_457, 526_543],
    ]);
    expect(a.budgetRaisedMicros).toBe(50_000);
    // A resolution's cost was kept as Claude Code reported it (0.123456789): the nearest micro-dollar,
    // as that version charged it to the budgets.
    expect(state.tasks.b!.conflict!.resolutions.map((r) => [r.costMicros, r.capMicros])).toEqual([
      [123_457, 1_029_629],
    ]);
    // What the records add up to is what the budget says was spent.
    const records = Object.values(state.tasks).flatMap((t) => [
      ...t.attempts,
      ...(t.conflict?.resolutions ?? []),
    ]);
    expect(records.reduce((sum, r) => sum + (r.costMicros ?? 0), 0)).toBe(state.budget!.run.spentMicros);
    expect(JSON.stringify(state)).not.toMatch(/Usd"/);
  });

  it("resumes under its graph without drift: fingerprints of budgets are those of dollars", () => {
    const graph = parseGraph("old.yaml", stored.graph);
    const state = load();
    expect(graphFingerprint(graph)).toBe(state.fingerprint);
    const resumed = resumeRun(createEngine(graph), graph, state, 10);
    expect(resumed.drift).toEqual([]);
    // Fingerprints the version before micro-dollars took of a graph with every kind of budget.
    const budgeted = parseGraph(
      "fp.yaml",
      "name: fp\nmax_cost_usd: 20.5\nmax_attempt_cost_usd: 0.7\nmin_attempt_cost_usd: 0.3\nworkstreams:\n  - id: core\n    max_cost_usd: 8.123456\ntasks:\n  - id: a\n    workstream_id: core\n    description: do a\n    max_cost_usd: 0.7\n    max_attempt_cost_usd: 0.35\n  - id: b\n    workstream_id: core\n    description: do b\n    dependencies: [a]\n",
    );
    expect([graphFingerprint(budgeted), ...budgeted.tasks.map(taskFingerprint)]).toEqual([
      "6b628c0f7eca1770",
      "e4ea424aaad1",
      "63653bfcd3fb",
    ]);
  });

  it.each([
    [
      "raisedUsd",
      1e300,
      "run.json has a wrong value at budget.run.raisedUsd: 1e+300 is not an amount of US dollars",
    ],
    [
      "raisedUsd",
      -1,
      "run.json has a wrong value at budget.run.raisedUsd: -1 is not an amount of US dollars",
    ],
    [
      "spentUsd",
      "5",
      'run.json has a wrong value at budget.run.spentUsd: "5" is not an amount of US dollars',
    ],
    // Raises are bounded as commands bound them: a budget reaches at most $1,000,000,000.
    [
      "raisedMicros",
      1e15 + 1,
      "run.json has a wrong value at budget.run.raisedMicros: Too big: expected number to be <=1000000000000000",
    ],
    [
      "raisedMicros",
      0.5,
      "run.json has a wrong value at budget.run.raisedMicros: Invalid input: expected int, received number",
    ],
  ])("refuses a stored %s of %j as damage, in one line", (field, value, message) => {
    const index = withRunBudget(field, value);
    expect(() => load(index)).toThrow(StateDamageError);
    expect(() => load(index)).toThrow(message);
  });
});

describe("a report from an Action older than micro-dollars", () => {
  const report = (result: Record<string, unknown>) => ({
    run: "old/1",
    task: "a",
    attempt: 2,
    result: {
      outcome: "succeeded",
      noPr: false,
      reason: null,
      concerns: [],
      opsConcerns: [],
      summary: null,
      outputs: [],
      turns: 3,
      gates: [],
      commit: null,
      ...result,
    },
  });

  it("is read with its cost in dollars, as the nearest micro-dollar", () => {
    const parsed = attemptReportSchema.parse(report({ costUsd: 0.123456789 }));
    expect(parsed.result.costMicros).toBe(123_457);
    expect(parsed.result).not.toHaveProperty("costUsd");
    expect(eventsOfReport(parsed, 1)).toContainEqual(expect.objectContaining({ costMicros: 123_457 }));
    expect(attemptReportSchema.parse(report({ costMicros: 5 })).result.costMicros).toBe(5);
  });

  it("is refused when its cost is no amount", () => {
    for (const costUsd of [1e303, -1, "0.5"])
      expect(attemptReportSchema.safeParse(report({ costUsd })).success).toBe(false);
    expect(attemptReportSchema.safeParse(report({})).success).toBe(false);
  });
});
