/**
 * Failures told apart before a repair is spent. A landing's gate that fails runs again on the same
 * tree, with nothing changed: failing every time, it is a break (a repair is due); passing on a rerun,
 * it is flaky (nothing to repair: the tree lands on that pass, and the flake is said to a person); a
 * gate that did not finish within its limit is a timeout, said as one and never repaired (a repair
 * cannot make a slow machine fast, and the tree may be fine).
 */

/** A gate's answer: null when it passed, its failure (a reason, or the reason with its output and whether it ran out of time). */
export type GateAnswer = string | { reason: string; output?: string; timedOut?: boolean } | null;

export type Verdict = "pass" | "flaky" | "break" | "timed_out";

export interface GatesVerdict {
  verdict: Verdict;
  /** Why it did not pass (a break or a timeout), else null. */
  reason: string | null;
  /** The end of the failing gate's output (a break, a timeout, or the flake's first failure). */
  output: string | null;
  /** The gates that failed and then passed on the same tree. */
  flaky: string[];
}

/** Runs after a failure before it counts as a break: a gate that fails half the time passes one in four. */
export const RERUNS = 2;

const reasonOf = (a: Exclude<GateAnswer, null>) => (typeof a === "string" ? a : a.reason);
const outputOf = (a: Exclude<GateAnswer, null>) => (typeof a === "string" ? null : (a.output ?? null));

/** Runs the gates in order, each failure run again up to `reruns` times on the same tree. */
export async function judgeGates(
  gates: readonly string[],
  gate: (command: string) => Promise<GateAnswer>,
  reruns = RERUNS,
): Promise<GatesVerdict> {
  const flaky: string[] = [];
  let flakeOutput: string | null = null;
  for (const command of gates) {
    let answer = await gate(command);
    if (answer === null) continue;
    const first = answer;
    for (let i = 0; i < reruns && answer !== null; i++) {
      if (typeof answer !== "string" && answer.timedOut) break;
      answer = await gate(command);
    }
    if (answer === null) {
      flaky.push(command);
      flakeOutput ??= outputOf(first);
      continue;
    }
    const timedOut = typeof answer !== "string" && answer.timedOut === true;
    return {
      verdict: timedOut ? "timed_out" : "break",
      reason: reasonOf(answer),
      output: outputOf(answer),
      flaky,
    };
  }
  return { verdict: flaky.length ? "flaky" : "pass", reason: null, output: flakeOutput, flaky };
}

/** What a person is told of flaky gates: "`npm test` failed, then passed on the same tree (flaky)". */
export const flakyNote = (flaky: readonly string[]): string =>
  `${flaky.map((g) => `\`${g}\``).join(", ")} failed, then passed on the same tree with nothing changed (flaky: not repaired; have a person look at it)`;
