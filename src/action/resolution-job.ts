/**
 * A resolution attempt as a job: the PR's branch (a task branch, or a workstream's integration branch)
 * takes the branch it merges into by a merge (attempt/resolve.ts), Claude Code resolving what
 * conflicts, and the runner pushes the merge commit: a fast-forward of the branch, never a force-push,
 * so that a person who pushed meanwhile wins (the push is refused and the engine merges again).
 */
import * as core from "@actions/core";
import { gitRaw, git } from "../attempt/git.ts";
import {
  type AttemptResult,
  DEFAULT_ALLOWED_TOOLS,
  failedAttempt,
  runAttempt,
} from "../attempt/run-attempt.ts";
import { buildPlan } from "../plan/plan.ts";
import { type ResolutionSubject, resolverOf } from "../plan/resolution.ts";
import { intentsOf } from "../protocol/resolution.ts";
import {
  AGENT_CONFIG_PATHS,
  agentEnv,
  fetchBranches,
  finishJob,
  type Job,
  type JobOutcome,
} from "./job-io.ts";

export async function runResolutionJob(job: Job, subject: ResolutionSubject): Promise<JobOutcome> {
  const { inputs, state, graph, repoDir, auth, mask } = job;
  const plan = buildPlan(graph);
  const resolver = resolverOf(plan, subject);
  const { agentTask: task } = resolver;
  const defaultBranch = state.source.branch;
  core.startGroup(`Check out ${resolver.branch}`);
  await fetchBranches(repoDir, job.url, [resolver.branch, resolver.target, defaultBranch], auth);
  await git(repoDir, ["checkout", "-q", "-B", resolver.branch, `origin/${resolver.branch}`]);
  core.endGroup();

  const holder =
    subject.task !== undefined ? state.tasks[subject.task] : state.workstreams[subject.workstream];
  const capUsd = holder?.conflict?.resolutions[inputs.attempt - 1]?.capUsd ?? null;
  const summaries = Object.fromEntries(Object.entries(state.tasks).map(([id, t]) => [id, t.summary]));
  let result: AttemptResult;
  core.startGroup(`Claude Code: resolving ${resolver.branch} with ${resolver.target}`);
  try {
    result = await runAttempt({
      graph,
      task,
      graphText: state.source.text,
      attempt: inputs.attempt,
      repoDir,
      baseRef: `origin/${resolver.branch}`,
      workDir: job.workDir,
      inputFiles: [],
      peers: {},
      capUsd,
      resolution: {
        target: `origin/${resolver.target}`,
        intents: intentsOf(plan, subject, summaries),
        gates: resolver.gates,
        // The agent's configuration is the default branch's, not what either side may have planted.
        agentConfig: { from: `origin/${defaultBranch}`, paths: AGENT_CONFIG_PATHS },
      },
      claude: {
        bin: inputs.claudePath,
        env: { ...agentEnv(job.env), ...job.credentialEnv, DISABLE_AUTOUPDATER: "1" },
        maxTurns: inputs.maxTurns,
        timeoutMs: inputs.timeoutMs,
        allowedTools: DEFAULT_ALLOWED_TOOLS,
      },
      gateTimeoutMs: inputs.gateTimeoutMs,
      signalEntry: job.env.AGENTRELAY_ENTRY || process.argv[1]!,
      log: (line) => core.info(mask(line)),
    });
  } catch (error) {
    result = failedAttempt(`the runner failed: ${mask((error as Error).message)}`);
  }
  core.endGroup();

  let pushed = false;
  if (result.outcome === "succeeded" && result.commit) {
    const push = await gitRaw(
      repoDir,
      ["push", "-q", "origin", `HEAD:refs/heads/${resolver.branch}`],
      undefined,
      auth,
    );
    if (push.code === 0) pushed = true;
    else
      result = {
        ...failedAttempt(
          `pushing ${resolver.branch} failed (did someone push it meanwhile?): ${mask(push.stderr.trim())}`,
        ),
        costUsd: result.costUsd,
        turns: result.turns,
        conflicted: result.conflicted,
      };
  }
  return finishJob(job, result, pushed, capUsd);
}
