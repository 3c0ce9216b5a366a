/**
 * A step of a workflow as a runner runs it, for the stand-in: one of our bundled entries (`dist/`) in
 * a fresh process, in its own home with the runner's files (outputs, summary), and the environment
 * given; its output is collected as the step's log.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { REPO_ROOT } from "./paths.ts";

export interface RunnerStep {
  child: ChildProcess;
  /** The file the step's outputs are written to (GITHUB_OUTPUT). */
  output: string;
  /** The exit code and the log, once the process ended. */
  done: Promise<{ code: number | null; log: string }>;
}

/** `wrap` is put before the step's process (the capabilities of a job container, say). */
export function runnerStep(
  entry: string,
  home: string,
  env: Record<string, string | undefined>,
  wrap: string[] = [],
): RunnerStep {
  mkdirSync(home, { recursive: true });
  const output = join(home, "output");
  writeFileSync(output, "");
  const [program, ...args] = [...wrap, process.execPath, join(REPO_ROOT, entry)];
  const child = spawn(program!, args, {
    cwd: home,
    stdio: ["ignore", "pipe", "pipe"],
    env: {
      PATH: process.env.PATH,
      HOME: home,
      GITHUB_REPOSITORY: "octo/demo",
      GITHUB_OUTPUT: output,
      GITHUB_STEP_SUMMARY: output,
      ...env,
    },
  });
  let log = "";
  child.stdout!.on("data", (d) => (log += d));
  child.stderr!.on("data", (d) => (log += d));
  const done = new Promise<{ code: number | null; log: string }>((resolve) =>
    child.on("close", (code) => resolve({ code, log })),
  );
  return { child, output, done };
}
