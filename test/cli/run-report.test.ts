/** The report a local run ends with, for runs whose conflicts were resolved or wait for a person. */
import { describe, expect, it } from "vitest";
import { runReport, statusJson } from "../../src/cli/run-report.ts";
import { simulate } from "../../src/engine/simulate.ts";
import { graphOf } from "../support/graphs.ts";

const graph = graphOf(
  [
    { id: "a", ws: "left" },
    { id: "b", ws: "right" },
  ],
  [
    { id: "left", autoMerge: true },
    { id: "right", autoMerge: true },
  ],
  "max_concurrency: 2",
);

describe("the local run's report", () => {
  it("says which task PR's conflicts wait for you, and what to do", () => {
    const { state } = simulate(graph, { taskConflicts: new Map([["b", 3]]), costPerAttempt: 10_000 });
    const report = runReport(state, "/repo", graph);
    expect(report).toContain(
      "Run g/1: waiting for you: task b's PR: merge `agentrelay/g/right/integration` into `agentrelay/g/b` by hand: they conflict in `simulated.txt` (2 resolution attempts did not settle them), then run again",
    );
    // b's spend counts its PR's two resolutions.
    // A local task's branch has no PR: it waits to be merged.
    expect(report).toMatch(/\n {2}b +to merge +attempts 1 {2}\$0\.03 /);
    expect(report).not.toContain("PR open");
    expect(report).toContain("      conflicts in simulated.txt: 2 resolutions, $0.02, the last succeeded\n");
  });

  it("names an integration PR's resolutions under its workstream", () => {
    const { state } = simulate(graph, { integrationConflicts: new Map([["right", 1]]) });
    const report = runReport(state, "/repo", graph);
    expect(report).toContain("Run g/1: succeeded");
    expect(report).toMatch(
      /\n {2}right +merged +merged into main\n {6}conflicts in simulated\.txt: 1 resolution, \$0\.00, the last succeeded\n/,
    );
  });

  it("says what each merged task and landed workstream cost, and counts verifications in words", () => {
    const gated = graphOf(
      [
        { id: "a", ws: "left", extra: "completion_gate: make test" },
        { id: "b", ws: "right", extra: "completion_gate: make test" },
      ],
      [
        { id: "left", autoMerge: true },
        { id: "right", autoMerge: true },
      ],
      "max_concurrency: 2",
    );
    const { state } = simulate(gated, {
      brokenTogether: new Map([["right", 1]]),
      failures: new Map([["a", 1]]),
      costPerAttempt: 100_000,
    });
    const report = runReport(state, "/repo", gated);
    // a fails (its one attempt), b merges, right's branch is repaired once: $0.10 each.
    expect(report).toContain("verified: 1 verification, 1 repair, $0.10");
    expect(report).not.toContain("(s)");
    expect(report).toContain(
      "Spent $0.30\nOf it: $0.10 in the tasks' rows, $0.10 on failed work, $0.10 on repairs. Cost per merged task $0.30 (1 merged), per landed workstream $0.30 (1 landed); of the spend, 33% to failed work, 33% to repairs.",
    );
  });

  it("gives status --json the spend in rows that add up to it, and the cost per merged result", () => {
    const { state } = simulate(graph, {
      taskConflicts: new Map([["b", 1]]),
      failures: new Map([["a", 1]]),
      costPerAttempt: 10_000,
    });
    const json = statusJson(state, graph) as {
      spentUsd: number;
      spendRows: Record<string, number>;
      cost: { perMergedTaskUsd: number; mergedTasks: number; shares: Record<string, number> };
    };
    expect(json.spentUsd).toBe(0.03); // a's attempt, b's attempt and its PR's resolution
    expect(Object.values(json.spendRows).reduce((a, b) => a + b, 0)).toBeCloseTo(json.spentUsd, 9);
    expect(json.cost).toMatchObject({ mergedTasks: 1, perMergedTaskUsd: 0.03 });
    expect(json.cost.shares.failed).toBeCloseTo(1 / 3, 9);
    expect(json.cost.shares.resolutions).toBeCloseTo(1 / 3, 9);
  });

  it("says once, under its headline, that the attempts' network was not filtered, and why", () => {
    const { state } = simulate(graph, {});
    const unfiltered =
      "network: not filtered: this machine gives the attempt no network namespace (nft was not found on PATH)";
    for (const t of Object.values(state.tasks)) t.opsConcerns = [unfiltered, "npm install took 4 minutes"];
    const report = runReport(state, "/repo", graph);
    expect(report.split(unfiltered)).toHaveLength(2);
    expect(report).toContain(`Run g/1: succeeded\n${unfiltered}\n\n`);
    expect(report.split("      ops concern: npm install took 4 minutes")).toHaveLength(3);
  });
});
