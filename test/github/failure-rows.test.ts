/**
 * Why a task failed, in the status comment's rows (the failures table, the "Waiting for you" line, the
 * blocked tasks' groups), cut as a conflict's reason is: where a clause ends, when that keeps the
 * reason's sense, else at a word, and never inside a code span (issue 44, item 8: rows "cut
 * mid-sentence").
 */
import { describe, expect, it } from "vitest";
import { cutClauses } from "../../src/attempt/redact.ts";
import { statusComment } from "../../src/github/status-comment.ts";
import { runAt, workstreamsGraph } from "../support/runs.ts";

/** A gate's failure: what failed and how, then its output, which no row has room for. */
const GATE =
  "Completion gate failed: `npm test -- --run` exited 1 (3 of 40 tests failed); the last lines said: expected 4 to be 5 at test/round_trip.test.ts line 12, then expected the parsed document to keep every heading and its anchors";
/** A reason whose only clause end within its row comes early: "Gate failed" says too little. */
const EARLY =
  "Gate failed: pytest -q tests/test_module.py::test_round_trip_keeps_unicode_names tests/test_other.py::test_headings_keep_their_anchors exited 1 after three tries; the last lines said AssertionError";

/** The status comment's rows that give why `w0_t0` failed. */
function said(reason: string): { failures: string; waiting: string; blocked: string } {
  const { plan, state } = runAt(workstreamsGraph(1, 3, "rows"), {
    w0_t0: { status: "failed", reason },
    w0_t1: { status: "blocked", reason: "dependency 'w0_t0' failed" },
  });
  const lines = statusComment(plan, state, 90_000).split("\n");
  const find = (start: string) => lines.find((l) => l.startsWith(start))!;
  return {
    failures: find("| `w0_t0` |"),
    waiting: find("- **Waiting for you**: "),
    blocked: find("- 1 task blocked by `w0_t0`"),
  };
}

const balanced = (text: string) => (text.match(/`/g) ?? []).length % 2 === 0;

describe("a failure reason in the status comment's rows", () => {
  it("ends where a clause ends, when that keeps what failed and how", () => {
    const { failures, waiting, blocked } = said(GATE);
    const whole =
      "Completion gate failed: `npm test -- --run` exited 1 (3 of 40 tests failed); the last lines said …";
    expect(failures).toContain(`| ${whole} |`);
    expect(waiting).toContain(`\`w0_t0\` failed (${whole})`);
    // In 80 characters: what failed and how, whole, and no word of its output.
    expect(blocked).toContain(
      "failed (Completion gate failed: `npm test -- --run` exited 1 (3 of 40 tests failed) …)",
    );
    for (const row of [failures, waiting, blocked]) expect(balanced(row)).toBe(true);
  });

  it("ends at a word when the clauses that fit would drop what failed", () => {
    const { failures } = said(EARLY);
    expect(failures).toContain(
      "| Gate failed: pytest -q tests/test_module.py::test_round_trip_keeps_unicode_names tests/test_other.py::test_headings_keep_their_anchors exited 1 after three … |",
    );
    expect(cutClauses(EARLY, 160)).toBe("Gate failed …");
  });
});
