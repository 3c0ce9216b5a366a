/**
 * Entry of the orchestrator Action (`uses: agentrelay/agentrelay/orchestrate@v0`, bundled to
 * dist/orchestrate/index.js): one event of the orchestrator workflow, then the repository reconciled.
 * Every failure is one line; the next run picks up what this one could not do.
 */
import * as core from "@actions/core";
import { orchestrate } from "./workflow.ts";

try {
  const { failed } = await orchestrate(process.env);
  if (failed.length > 0) core.setFailed(`${failed.join("; ")} (the next run tries again)`);
} catch (error) {
  core.setFailed((error as Error).message);
}
