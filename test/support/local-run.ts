/** How tests start a local run with the real Claude Code CLI against a scripted model server. */
export { scriptedRun } from "../../harness/local-run.ts";
