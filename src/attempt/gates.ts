/**
 * Gates: a command run in the checkout with a wall-clock limit (the completion gate, a landing's
 * gates), and the ends of what it printed that are kept and shown.
 */
import { type Confinement, runBounded } from "./bounded.ts";

/** Runs the gate command in the checkout, with a wall-clock limit; output is stdout and stderr together. */
export async function runGate(
  command: string,
  cwd: string,
  timeoutMs: number,
  env: NodeJS.ProcessEnv,
  confine?: Confinement,
): Promise<{ passed: boolean; output: string; timedOut: boolean }> {
  const run = await runBounded("bash", ["-c", command], {
    cwd,
    env,
    timeoutMs,
    ...(confine ? { confine } : {}),
  });
  const note = run.timedOut
    ? `[agentrelay] the gate did not finish within ${Math.round(timeoutMs / 1000)} s\n`
    : run.code !== 0
      ? `[agentrelay] exit code ${run.code}\n`
      : "";
  const separator = note && run.output && !run.output.endsWith("\n") ? "\n" : "";
  return {
    passed: !run.timedOut && run.code === 0,
    output: run.output + separator + note,
    timedOut: run.timedOut,
  };
}

/** The end of a long text, said to be cut. */
export const tail = (text: string, max = 6_000) =>
  text.length > max ? `[... ${text.length - max} characters cut ...]\n${text.slice(-max)}` : text;

/** The end of a failed gate's output, for the report and the check run: its last lines, at most 2,000 characters. */
export function gateTail(output: string, lines = 30, max = 2_000): string {
  const last = output.trimEnd().split("\n").slice(-lines).join("\n");
  return last.length > max ? `…${last.slice(-(max - 1))}` : last;
}
