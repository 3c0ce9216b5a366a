/** The report a local run ends with, for runs whose conflicts were resolved or wait for a person. */
import { describe, expect, it } from "vitest";
import { runReport } from "../../src/cli/run-report.ts";
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
    expect(report).toMatch(/\n {2}b +PR open +attempts 1 {2}\$0\.03 /);
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
});
