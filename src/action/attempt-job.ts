/**
 * The attempt in the job: run as the agent's own user where the runner is root (the job container),
 * in the job's checkout, with the job's agent and limits; what the agent left in its work directory
 * is made plain files before the workflow's artifact step (root, following links) uploads it.
 */
import { type Dirent, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as core from "@actions/core";
import { type AgentUser, AgentUserError, agentUserPossible, claimAgentUser } from "../attempt/agent-user.ts";
import {
  type AttemptContext,
  type AttemptResult,
  DEFAULT_ALLOWED_TOOLS,
  failedAttempt,
} from "../attempt/attempt.ts";
import { runAttempt } from "../attempt/run-attempt.ts";
import { ACTION_FIX_CREDENTIAL, agentEnv, type Job } from "./job-io.ts";

/**
 * The agent's own user, where the runner is root (the job container): see attempt/agent-user.ts. A
 * runner that is root and cannot give the agent a user of its own refuses to run it as root.
 */
async function agentUserOf(job: Job): Promise<AgentUser | null> {
  if (process.geteuid?.() !== 0) return null;
  if (!agentUserPossible())
    throw new AgentUserError(
      "the runner is root but cannot run the agent as a user of its own (it needs Linux and setpriv, as in the agent image): it will not run the agent as root",
    );
  return claimAgentUser(job.env.RUNNER_TEMP || tmpdir());
}

/** What an attempt's report says when the agent shared the runner's user (no job container). */
const SAME_USER =
  "the agent ran as the runner's own user (the runner is not root, so not in the agent container): it could read the runner's environment and change what the runner runs; run the task job in the agent container";

/**
 * Runs the attempt in the job's checkout with the job's agent and limits, in a log group; a runner that
 * fails is the attempt's failure, with the reason masked.
 */
export async function attemptInJob(
  job: Job,
  title: string,
  attempt: Pick<
    AttemptContext,
    "task" | "baseRef" | "inputFiles" | "peers" | "landings" | "landedElsewhere" | "capMicros" | "resolution"
  >,
): Promise<AttemptResult> {
  const { inputs, env, state } = job;
  core.startGroup(title);
  let agentUser: AgentUser | null = null;
  try {
    agentUser = await agentUserOf(job);
    if (agentUser) core.info(`the agent runs as a user of its own (uid ${agentUser.uid})`);
    const result = await runAttempt({
      graph: job.graph,
      graphText: state.source.text,
      attempt: inputs.attempt,
      repoDir: job.repoDir,
      gitDir: { path: job.checkout.gitDir, seal: true },
      workDir: job.workDir,
      ...(state.source.params ? { params: state.source.params } : {}),
      claude: {
        bin: inputs.claudePath,
        env: { ...agentEnv(env), ...job.credentialEnv, DISABLE_AUTOUPDATER: "1" },
        maxTurns: inputs.maxTurns,
        timeoutMs: inputs.timeoutMs,
        allowedTools: DEFAULT_ALLOWED_TOOLS,
      },
      gateTimeoutMs: inputs.gateTimeoutMs,
      signalEntry: env.AGENTRELAY_ENTRY || process.argv[1]!,
      // The egress allowlist, in the job container's own namespace (AGENTRELAY_EGRESS=off: not filtered,
      // for runners whose namespace is not the job's own, such as a self-hosted machine).
      ...(env.AGENTRELAY_EGRESS === "off" ? {} : { network: { mode: "container" as const } }),
      retryCommand: `comment \`/agentrelay retry ${inputs.task}\` on the run's tracking issue`,
      fixCredential: ACTION_FIX_CREDENTIAL,
      // No token of agentrelay's may push a workflow file; a user who gave the job one that may says so.
      workflowFilesRefused: env.AGENTRELAY_WORKFLOWS_PERMISSION !== "write",
      log: (line) => core.info(job.mask(line)),
      ...(agentUser ? { agentUser } : {}),
      ...attempt,
    });
    return agentUser ? result : { ...result, opsConcerns: [...result.opsConcerns, SAME_USER] };
  } catch (error) {
    const failed = failedAttempt(`the runner failed: ${job.mask((error as Error).message)}`);
    // The job cannot give the agent a user of its own: the same would fail a retry, so it does not count.
    return error instanceof AgentUserError ? { ...failed, agentUnavailable: true } : failed;
  } finally {
    await agentUser?.release().catch((error: unknown) => core.warning(job.mask((error as Error).message)));
    // What the work directory's artifact step uploads (as root, following links) is files, nothing else.
    removeSpecialFiles(job.workDir);
    core.endGroup();
  }
}

/** Removes every link, FIFO, socket and device below `dir` (what the agent may have left there). */
export function removeSpecialFiles(dir: string): void {
  let entries: Dirent[];
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return;
  }
  for (const entry of entries) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) removeSpecialFiles(path);
    else if (!entry.isFile()) rmSync(path, { force: true });
  }
}
