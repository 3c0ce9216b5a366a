/**
 * A resolution attempt as a job: the PR's branch (a task branch, or a workstream's integration branch)
 * takes the branch it merges into by a merge (attempt/resolve.ts), Claude Code resolving what
 * conflicts, and the runner pushes the merge commit: a fast-forward of the branch, never a force-push,
 * so that a person who pushed meanwhile wins (the push is refused and the engine merges again).
 * A verification or a repair of an integration branch (attempt/repair.ts) is the same job: the
 * target merged in, the gates run (a repair's agent fixing what fails first), the result pushed the
 * same way, and the report names the target commit the gates ran with. A target that changed a
 * workflow file is never pushed merged in (attempt/workflow-landing.ts).
 */
import * as core from "@actions/core";
import { failedAttempt } from "../attempt/attempt.ts";
import {
  mergedTree,
  mergeItYourself,
  targetBeforeWorkflows,
  withoutWorkflows,
} from "../attempt/workflow-landing.ts";
import { recordsOf } from "../engine/conflicts.ts";
import { buildPlan } from "../plan/plan.ts";
import { type ResolutionSubject, resolverOf } from "../plan/resolution.ts";
import { intentsOf } from "../protocol/resolution.ts";
import { fetchBranches, finishJob, giveAgentRepository, type Job, type JobOutcome } from "./job-io.ts";
import { attemptInJob } from "./attempt-job.ts";

/** GitHub's refusal of a push that changes a workflow file without the `workflows` permission. */
const WORKFLOWS_REFUSED = /create or update workflow .* without .workflows. permission/;

export async function runResolutionJob(job: Job, subject: ResolutionSubject): Promise<JobOutcome> {
  const { inputs, state, graph, checkout, auth, mask } = job;
  const plan = buildPlan(graph);
  const resolver = resolverOf(plan, subject);
  const { agentTask: task } = resolver;
  const { defaultBranch } = job;
  core.startGroup(`Check out ${resolver.branch}`);
  await fetchBranches(checkout, job.url, [resolver.branch, resolver.target, defaultBranch], auth);
  await checkout.git(["checkout", "-q", "-B", resolver.branch, `origin/${resolver.branch}`]);
  await giveAgentRepository(checkout, resolver.branch);
  core.endGroup();

  const capMicros = recordsOf(state, subject)?.[inputs.attempt - 1]?.capMicros ?? null;
  const { kind } = subject;
  const branchHead = `origin/${resolver.branch}`;
  const fullTarget = `origin/${resolver.target}`;
  // A target that changed a workflow file: a resolution merges it only up to the commit before that
  // change (attempt/workflow-landing.ts), when the conflict is already there; else a person merges it.
  const beforeWorkflows = kind ? null : await targetBeforeWorkflows(checkout, branchHead, fullTarget);
  if (beforeWorkflows && (await mergedTree(checkout, branchHead, beforeWorkflows.upTo)) !== null) {
    const reason = mergeItYourself(resolver.target, resolver.branch, beforeWorkflows.file);
    core.info(reason);
    return finishJob(
      job,
      { ...failedAttempt(reason), conflicted: [], verdict: "workflows" },
      false,
      capMicros,
    );
  }
  const doing =
    kind === "verify" ? "verifying" : kind === "repair" ? "Claude Code: repairing" : "Claude Code: resolving";
  let result = await attemptInJob(job, `${doing} ${resolver.branch} with ${resolver.target}`, {
    task,
    baseRef: `origin/${resolver.branch}`,
    inputFiles: [],
    peers: {},
    capMicros,
    resolution: {
      ...(kind ? { kind } : {}),
      ...(kind === "repair"
        ? { failure: state.workstreams[subject.workstream]?.verification?.failure ?? "" }
        : {}),
      target: beforeWorkflows?.upTo ?? fullTarget,
      intents: intentsOf(plan, subject, state.tasks, state.workstreams),
      gates: resolver.gates,
      testPaths: resolver.testPaths,
      // The agent's configuration is the default branch's, not what either side may have planted.
      agentConfig: { from: `origin/${defaultBranch}` },
    },
  });

  const before = await checkout.git(["rev-parse", `origin/${resolver.branch}`]);
  if (result.outcome === "succeeded" && result.commit && result.commit !== before) {
    // What GitHub takes from a token without `workflows` when the target changed a workflow file.
    const landing = await withoutWorkflows(checkout, {
      ...(kind ? { kind } : {}),
      before,
      commit: result.commit,
      target: fullTarget,
      beforeWorkflows,
      names: resolver,
    });
    if (landing && "commit" in landing) {
      core.info(landing.said);
      result = { ...result, commit: landing.commit };
    } else if (landing)
      result = {
        ...failedAttempt(landing.reason),
        verdict: "workflows",
        costMicros: result.costMicros,
        turns: result.turns,
        conflicted: result.conflicted,
      };
  }
  // A verification of a branch that already had its target changed nothing: it stands as pushed.
  let pushed = result.commit !== null && result.commit === before;
  if (result.outcome === "succeeded" && result.commit && !pushed) {
    const push = await checkout.raw(
      ["push", "-q", "origin", `${result.commit}:refs/heads/${resolver.branch}`],
      undefined,
      auth,
    );
    if (push.code === 0) pushed = true;
    else
      result = {
        ...failedAttempt(
          WORKFLOWS_REFUSED.test(push.stderr)
            ? `GitHub refused the push of ${resolver.branch}: ${resolver.target} changed a workflow file, and no token of agentrelay's may push a workflow change: merge ${resolver.target} into ${resolver.branch} yourself (the run goes on by itself)`
            : `pushing ${resolver.branch} failed (did someone push it meanwhile?): ${mask(push.stderr.trim())}`,
        ),
        ...(WORKFLOWS_REFUSED.test(push.stderr) ? { verdict: "workflows" as const } : {}),
        costMicros: result.costMicros,
        turns: result.turns,
        conflicted: result.conflicted,
      };
  }
  return finishJob(job, result, pushed, capMicros);
}
