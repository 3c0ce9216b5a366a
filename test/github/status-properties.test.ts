/**
 * The status comment stays true at every step of simulated runs of random graphs (failures,
 * conflicts, budgets, verifications failing and passing, repairs, design concerns, serialised
 * overlaps): the rows add up to the spend line, no PR is offered to a person to merge before it is
 * verified, the rows agree with the lines, and `simulate --at N` says the outcome its state holds.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { landingStage } from "../../src/engine/landing.ts";
import { standing } from "../../src/engine/progress.ts";
import { simulate, type SimulateOptions } from "../../src/engine/simulate.ts";
import { spendRows } from "../../src/engine/spend.ts";
import { verifies } from "../../src/engine/verification.ts";
import { statusComment, waitingFor } from "../../src/github/status-comment.ts";
import { workstreamState } from "../../src/github/workstream-chart.ts";
import { graphOf } from "../support/graphs.ts";

const PATHS = ["a.py", "b.py", "lib/"];
const tagged = (paths: string[]) =>
  `tagged_paths: [${paths.map((p) => `{ path: ${p}, category: src }`).join(", ")}]`;

const runArb = fc.record({
  tasks: fc.array(
    fc.record({
      ws: fc.nat({ max: 2 }),
      deps: fc.array(fc.nat(), { maxLength: 2 }),
      gated: fc.boolean(),
      paths: fc.subarray(PATHS, { maxLength: 1 }),
      failures: fc.constantFrom(0, 0, 1, Infinity),
      conflicts: fc.constantFrom(0, 0, 1, 3),
      concern: fc.boolean(),
    }),
    { minLength: 2, maxLength: 7 },
  ),
  workstreams: fc.array(
    fc.record({
      autoMerge: fc.boolean(),
      conflicts: fc.constantFrom(0, 0, 1),
      broken: fc.constantFrom(0, 0, 1, 2, Infinity),
    }),
    { minLength: 3, maxLength: 3 },
  ),
  // In hundredths of a cent: every amount is exact in the comment's dollars.
  budgetCents: fc.option(fc.integer({ min: 5, max: 200 })),
  attempts: fc.integer({ min: 1, max: 2 }),
  serialize: fc.boolean(),
});

type Run = typeof runArb extends fc.Arbitrary<infer T> ? T : never;

function scenario(run: Run) {
  const used = [...new Set(run.tasks.map((t) => t.ws))];
  const graph = graphOf(
    run.tasks.map((t, i) => ({
      id: `t${i}`,
      ws: `w${t.ws}`,
      deps: [...new Set(t.deps.filter((d) => d < i).map((d) => `t${d}`))],
      extra: [
        ...(t.gated ? ["completion_gate: make test"] : []),
        ...(t.paths.length ? [tagged(t.paths)] : []),
      ].join("\n"),
    })),
    used.map((w) => ({ id: `w${w}`, autoMerge: run.workstreams[w]!.autoMerge })),
    [
      "max_concurrency: 2",
      `max_task_attempts: ${run.attempts}`,
      "max_repair_attempts: 1",
      "min_attempt_cost_usd: 0.02",
      ...(run.budgetCents !== null ? [`max_cost_usd: ${run.budgetCents / 100}`] : []),
      ...(run.serialize ? ["overlaps: serialize"] : []),
    ].join("\n"),
  );
  const byTask = <T>(pick: (t: Run["tasks"][number]) => T, keep: (v: T) => boolean) =>
    new Map(run.tasks.flatMap((t, i) => (keep(pick(t)) ? [[`t${i}`, pick(t)] as [string, T]] : [])));
  const byWs = (pick: (w: Run["workstreams"][number]) => number) =>
    new Map(
      used.flatMap((w) =>
        pick(run.workstreams[w]!) ? [[`w${w}`, pick(run.workstreams[w]!)] as [string, number]] : [],
      ),
    );
  const options: SimulateOptions = {
    failures: byTask(
      (t) => t.failures,
      (n) => n > 0,
    ),
    taskConflicts: byTask(
      (t) => t.conflicts,
      (n) => n > 0,
    ),
    concerns: new Set(byTask((t) => t.concern, Boolean).keys()),
    integrationConflicts: byWs((w) => w.conflicts),
    brokenTogether: byWs((w) => w.broken),
    costPerAttempt: 30_000,
  };
  return { graph, options };
}

/** Dollars as a Cost cell shows them, in micro-dollars. */
const dollars = (text: string) => Math.round(Number(text.replace(/[$,]/g, "")) * 1_000_000);

/** The dollars of the tables' Cost columns, found by their heads (a table leaves out empty columns). */
function costColumns(comment: string): { tasks: number; failures: number } {
  let tasks = 0;
  let failures = 0;
  let table: "tasks" | "failures" | null = null;
  let column = -1;
  for (const line of comment.split("\n")) {
    if (!line.startsWith("|")) table = null;
    if (line.startsWith("| Task |") || line.startsWith("| What broke |")) {
      table = line.startsWith("| Task |") ? "tasks" : "failures";
      column = line.split(" | ").findIndex((c) => c.replace(/ \|$/, "") === "Cost");
      continue;
    }
    if (!table || line.startsWith("|---") || column < 0) continue;
    const cost = line.split(" | ")[column]!.replace(/ \|$/, "").trim();
    if (cost.startsWith("$")) {
      if (table === "tasks") tasks += dollars(cost);
      else failures += dollars(cost);
    }
  }
  return { tasks, failures };
}

describe("the status comment over simulated runs", () => {
  it("is true at every step: rows add up to the spend, merges are offered only once verified, rows agree with lines", () => {
    fc.assert(
      fc.property(runArb, (run) => {
        const { graph, options } = scenario(run);
        const full = simulate(graph, options);
        // It never ends "running" with nothing running.
        expect(full.outcome).not.toBe("running");
        for (let at = 1; at <= full.eventCount; at++) {
          const { plan, state, outcome } = simulate(graph, { ...options, maxEvents: at });
          const comment = statusComment(plan, state, at * 60_000);
          const lines = waitingFor(plan, state);
          // Every dollar in one row: the Cost column, the failures', the jobs', what a reset cleared.
          const rows = spendRows(state);
          const shown = costColumns(comment);
          expect(shown.tasks).toBe(rows.tasks);
          expect(shown.failures).toBe(rows.failures);
          expect(shown.tasks + shown.failures + rows.resolutions + rows.repairs + rows.cleared).toBe(
            state.budget?.run.spentMicros ?? 0,
          );
          for (const wsId of plan.workstreams.keys()) {
            const ws = state.workstreams[wsId]!;
            const stage = landingStage(plan, state, wsId);
            const row = workstreamState(plan, state, wsId);
            const offered = (text: string) =>
              ws.pr !== null &&
              (text.includes(`**Waiting for you**: merge [#${ws.pr.number}]`) ||
                text.includes(`[#${ws.pr.number}](${ws.pr.url}) waits for you: merge it`));
            // No "merge it" for a PR not yet verified (nor one no repair fixed).
            if (verifies(plan, wsId) && !ws.verification?.passed) {
              expect(offered(comment)).toBe(false);
              expect(offered(row)).toBe(false);
            }
            // The row and the lines agree on a merge left to a person.
            if (ws.pr && stage?.stage === "merge") {
              expect(row).toContain("waits for you: merge it");
              expect(lines.some((l) => l.includes(`[#${ws.pr!.number}]`))).toBe(true);
            }
            if (stage?.stage === "unverified") expect(row).toContain("is not verified");
          }
          // simulate --at N says the outcome its state holds.
          const now = standing(plan, state);
          if (state.outcome) expect(outcome).toBe(state.outcome);
          else if (now.moving) expect(outcome).toBe("running");
          else expect(["waiting_for_review", "waiting_for_budget", "cancelled"]).toContain(outcome);
          if (outcome === "succeeded") expect(state.outcome).toBe("succeeded");
        }
      }),
      { numRuns: 40 },
    );
  }, 120_000);
});
