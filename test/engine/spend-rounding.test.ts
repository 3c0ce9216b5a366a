/**
 * The cost line's parts add up to the spend as shown: each rounded to what `usd` shows of the total,
 * the cents left over given to the parts that lost the most (largest remainders).
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { runReport } from "../../src/cli/run-report.ts";
import { costLine } from "../../src/engine/spend.ts";
import { simulate } from "../../src/engine/simulate.ts";
import { MICROS_PER_USD, roundedParts, usd, usdStep } from "../../src/graph/amount.ts";
import { graphOf } from "../support/graphs.ts";

/** The micro-dollars an amount as shown stands for. */
/** The micro-dollars of an amount as written ("1,234.5678", without its "$"). */
const shownOf = (text: string) => Math.round(Number(text.replace(/,/g, "")) * MICROS_PER_USD);
const shown = (micros: number) => Math.round(Number(usd(micros).replace(/[$,]/g, "")) * MICROS_PER_USD);

describe("the parts of a spend, rounded", () => {
  it("add up, as shown, to the total as shown, each within a step of its own amount", () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 5_000 * MICROS_PER_USD }), { minLength: 1, maxLength: 6 }),
        (parts) => {
          const total = parts.reduce((a, b) => a + b, 0);
          const rounded = roundedParts(total, parts);
          expect(rounded.map(shown).reduce((a, b) => a + b, 0)).toBe(shown(total));
          for (const [i, r] of rounded.entries()) {
            expect(Math.abs(r - parts[i]!)).toBeLessThan(usdStep(total));
            expect(r % usdStep(total)).toBe(0);
          }
        },
      ),
      { numRuns: 500 },
    );
  });

  it("in simulated runs' reports: the amounts after 'Of it:' add up to the amount after 'Spent'", () => {
    const graph = graphOf(
      [
        { id: "a", ws: "left", extra: "completion_gate: make test" },
        { id: "b", ws: "right", extra: "completion_gate: make test" },
        { id: "c", ws: "right", deps: ["b"] },
      ],
      [
        { id: "left", autoMerge: true },
        { id: "right", autoMerge: true },
      ],
      "max_concurrency: 2",
    );
    const amounts = (text: string) => [...text.matchAll(/\$([\d,]+\.\d+)/g)].map((m) => shownOf(m[1]!));
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 3 * MICROS_PER_USD }),
        fc.integer({ min: 0, max: 3 }),
        fc.integer({ min: 0, max: 2 }),
        fc.integer({ min: 0, max: 2 }),
        (costPerAttempt, failsA, conflictsB, repairs) => {
          const { state } = simulate(graph, {
            costPerAttempt,
            failures: new Map([["a", failsA]]),
            taskConflicts: new Map([["b", conflictsB]]),
            brokenTogether: new Map([["right", repairs]]),
          });
          const report = runReport(state, "/repo", graph);
          const spent = amounts(/\nSpent (\$[\d,.]+)/.exec(report)![1]!)[0]!;
          const of = /\nOf it: (.*?)\. Cost/.exec(report)![1]!;
          expect(
            amounts(of).reduce((a, b) => a + b, 0),
            `${report}`,
          ).toBe(spent);
        },
      ),
      { numRuns: 60 },
    );
  });

  it("in a run's cost line: two rows of $1.005 are $1.01 and $1.00 under a spend of $2.01", () => {
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
    const { state } = simulate(graph, { failures: new Map([["a", 1]]), costPerAttempt: 1_005_000 });
    const report = runReport(state, "/repo", graph);
    expect(report).toContain("\nSpent $2.01\n");
    expect(costLine(state)).toMatch(/^Of it: \$1\.01 in the tasks' rows, \$1\.00 on failed work\. /);
  });
});
