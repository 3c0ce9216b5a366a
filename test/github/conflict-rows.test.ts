/**
 * A conflict left to a person, however many files and however long their names: the status comment's
 * line and row, and the local report, say what to do and why in whole clauses, never cut inside the
 * list of files or a code span (issue 44, item 8: "a conflict row cut mid-sentence").
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { cutClauses } from "../../src/attempt/redact.ts";
import { runReport } from "../../src/cli/run-report.ts";
import { simulate } from "../../src/engine/simulate.ts";
import { statusComment } from "../../src/github/status-comment.ts";
import { graphOf } from "../support/graphs.ts";

const graph = graphOf(
  [
    { id: "a", ws: "left" },
    { id: "b", ws: "right" },
    { id: "c", ws: "right", deps: ["b"] },
  ],
  [
    { id: "left", autoMerge: true },
    { id: "right", autoMerge: true },
  ],
  "max_concurrency: 2",
);
/** Fourteen files with long names, some of them not ASCII. */
const FILES = Array.from(
  { length: 14 },
  (_, i) => `src/packages/ünïcode-módulo-${i}/components/ComponentWithAVeryLongName${i}.tsx`,
);
const WHY = "(2 resolution attempts did not settle them)";

/** Backticks balanced: no code span left open to swallow the rest of the line. */
const balanced = (text: string) => (text.match(/`/g) ?? []).length % 2 === 0;

describe("a conflict left to a person, with many long file names", () => {
  const { plan, state } = simulate(graph, {
    taskConflicts: new Map([["b", 5]]),
    integrationConflicts: new Map([["left", 5]]),
    conflictFiles: FILES,
  });

  it("is said in whole sentences in the status comment's lines and rows", () => {
    const body = statusComment(plan, state, 10_000_000);
    const lines = body.split("\n").filter((l) => l.includes("by hand:"));
    // The task PR's line, the integration PR's line, and the line under the task's table.
    expect(lines).toHaveLength(3);
    for (const line of lines) {
      expect(line).toContain(
        "by hand: they conflict in `src/packages/ünïcode-módulo-0/components/ComponentWithAVeryLongName0.tsx` and 13 more " +
          WHY,
      );
      expect(line).not.toContain("…");
      expect(balanced(line)).toBe(true);
    }
    expect(body).toContain("| `b` | waits for you: merge by hand, as said under this table |");
    expect(lines.find((l) => l.startsWith("- `b` waits for you: "))).toMatch(
      /merge `[^`]+` into `[^`]+` by hand: /,
    );
  });

  it("is said whole in the local report, in the same words", () => {
    const report = runReport(state, "/repo", graph);
    expect(report).toContain(
      "Run g/1: waiting for you: task b's PR: merge `agentrelay/g/right/integration` into `agentrelay/g/b` by hand: they conflict in `src/packages/ünïcode-módulo-0/components/ComponentWithAVeryLongName0.tsx` and 13 more " +
        WHY +
        ", then run again",
    );
  });

  it("whose resolution's gates failed at length: the line keeps what to do and drops whole clauses, marked", () => {
    const gate = `the conflicts in \`${FILES[0]}\` were resolved, but the merged result fails its gates: the gate failed: pytest -q exited 1; ${"AssertionError: expected the merged module to keep its exports, ".repeat(6)}`;
    const long = structuredClone(state);
    long.tasks.b!.reason = `merge \`agentrelay/g/right/integration\` into \`agentrelay/g/b\` by hand: ${gate} ${WHY}`;
    const line = statusComment(plan, long, 10_000_000)
      .split("\n")
      .find((l) => l.startsWith("- `b` waits for you: "))!;
    const status = line.slice("- `b` ".length, -".".length);
    expect(status).toMatch(
      /^waits for you: merge `agentrelay\/g\/right\/integration` into `agentrelay\/g\/b` by hand: .* …$/,
    );
    // Cut where a clause ends: what is left is the reason's own opening, to a clause's end.
    const kept = status.slice("waits for you: ".length, -" …".length);
    expect(long.tasks.b!.reason!.startsWith(kept)).toBe(true);
    expect(long.tasks.b!.reason!.slice(kept.length)).toMatch(/^(: |; |\. | \()/);
    expect(balanced(status)).toBe(true);
  });
});

describe("cutting a reason at a clause's end", () => {
  it("keeps within the length, opens no code span, and keeps an opening of the text", () => {
    const piece = fc.oneof(
      fc.constantFrom(": ", "; ", ". ", " (", ")", ", ", " ", "`"),
      fc.string({ minLength: 1, maxLength: 30 }).map((s) => s.replace(/[`()]/g, "")),
      fc.constantFrom("ünïcode", "`src/a b/c.py`", "merge `x` into `y` by hand"),
    );
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 60 }), fc.integer({ min: 20, max: 300 }), (pieces, max) => {
        const text = pieces.join("");
        const shown = cutClauses(text, max);
        if (text.length <= max) {
          expect(shown).toBe(text);
          return;
        }
        expect(shown.length).toBeLessThanOrEqual(max);
        expect(shown.endsWith(" …")).toBe(true);
        if (balanced(text)) expect(balanced(shown)).toBe(true);
        expect(text.startsWith(shown.slice(0, -2).trimEnd())).toBe(true);
      }),
      { numRuns: 400 },
    );
  });
});
