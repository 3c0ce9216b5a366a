/**
 * What the semantic scenario tests assert of a finished run, locally and on the stand-in, and which
 * scenarios they run: by default a few (the real Claude Code CLI makes each take seconds, and the
 * whole suite runs in `npm run bench:semantic`); `AGENTRELAY_SEMANTIC_SUITE=all` runs every one.
 */
import { expect } from "vitest";
import { SCENARIOS, type SemanticScenario } from "../../harness/semantic-scenarios.ts";
import type { RunState, WorkstreamRun } from "../../src/engine/types.ts";

/** The scenarios to run: every one with AGENTRELAY_SEMANTIC_SUITE=all, else those named. */
export const scenariosToRun = (names: string[]): SemanticScenario[] =>
  process.env.AGENTRELAY_SEMANTIC_SUITE === "all"
    ? SCENARIOS
    : SCENARIOS.filter((s) => names.includes(s.name));

/**
 * A scenario a repair fixes: no broken tree reached the target, every workstream was verified before
 * it merged, and what broke was repaired.
 */
export function expectLandedWhole(state: RunState, broken: string[]): void {
  expect(broken).toEqual([]);
  expect(state.outcome).toBe("succeeded");
  const landings = Object.values(state.workstreams).map((w) => w.verification);
  expect(landings.every((v) => v?.passed)).toBe(true);
  const repairs = landings.flatMap((v) => v?.repairs ?? []);
  expect(repairs.length).toBeGreaterThan(0);
  expect(repairs.every((r) => r.outcome === "succeeded")).toBe(true);
}

/**
 * The scenario no repair fixes: no broken tree reached the target, and one integration PR waits for a
 * person, open, with why and the end of the failing output. Its id and run, for the host's own checks.
 */
export function expectLeftToPerson(state: RunState, broken: string[]): [string, WorkstreamRun] {
  expect(broken).toEqual([]);
  expect(state.outcome).toBeNull();
  const waiting = Object.entries(state.workstreams).filter(([, w]) => w.verification?.toPerson);
  expect(waiting).toHaveLength(1);
  const [id, ws] = waiting[0]!;
  expect(ws).toMatchObject({
    status: "pr_open",
    autoMergeSkipped: true,
    reason: "not verified: its gates fail on the tree that would land (1 repair attempt did not fix it)",
  });
  expect(ws.verification!.failure).toContain(
    "FAIL migrations.test.js - migration numbers must run 1..3 without gaps or twins: 1, 2, 2",
  );
  return [id, ws];
}
