/**
 * Entry of the task Action (bundled to dist/action/index.js). The same file serves the in-job
 * commands the agent calls (`node index.js signal agentrelay-concern ...`), through its shims.
 */
import * as core from "@actions/core";
import { runSignalCommand } from "../attempt/signals.ts";
import { runTaskJob } from "./github-job.ts";

if (process.argv[2] === "signal") {
  try {
    process.stdout.write(
      `${runSignalCommand(process.argv[3] ?? "", process.argv.slice(4), process.env.AGENTRELAY_SIGNAL_DIR)}\n`,
    );
  } catch (error) {
    process.stderr.write(`${process.argv[3]}: ${(error as Error).message}\n`);
    process.exitCode = 1;
  }
} else {
  try {
    const { result } = await runTaskJob(process.env);
    if (result.outcome === "failed")
      core.setFailed(`the attempt failed: ${result.reason ?? "no reason given"}`);
  } catch (error) {
    core.setFailed((error as Error).message);
  }
}
