/**
 * Facts from GitHub events: a task workflow run that ended without success, a task or integration PR
 * merged or closed by someone (the app's own merges are recorded when it makes them), and finished
 * checks on a waiting PR (its merge is tried again).
 */
import type { Context } from "probot";
import type { EngineEvent } from "../engine/types.ts";
import { parseAttemptRunName, type RepoContext, statusOf } from "../github/client.ts";
import { notAttemptRun, type WorkflowRunFacts } from "../github/attempt-runs.ts";
import { readBranchPolicy } from "../github/branch-policy.ts";
import { RunDriver } from "../github/driver.ts";
import { repositoryOfInput, resolutionInput } from "../protocol/resolution.ts";
import { dispatchOrchestrator } from "./workflow-elsewhere.ts";

/** Which run and task (or workstream) a branch belongs to. */
export function branchOwner(ref: string): { graph: string; task?: string; workstream?: string } | null {
  const integration = /^agentrelay\/([^/]+)\/([^/]+)\/integration$/.exec(ref);
  if (integration) return { graph: integration[1]!, workstream: integration[2]! };
  const task = /^agentrelay\/([^/]+)\/([^/]+)$/.exec(ref);
  return task ? { graph: task[1]!, task: task[2]! } : null;
}

async function currentRun(driver: RunDriver, graph: string): Promise<string | null> {
  const latest = await driver.latestRun(graph);
  return latest > 0 ? `${graph}/${latest}` : null;
}

/** The run's tracking issue a PR's body links back to (github/render.ts): `OWNER/NAME` of its repository. */
const RUN_LINK = /of run \[`[^`]+`\]\(https:\/\/[^/\s]+\/([A-Za-z0-9-]+)\/([A-Za-z0-9._-]+)\/issues\/\d+\)/;

/**
 * The run a branch of this repository belongs to, with the driver of the repository it lives in: this
 * one's, or, for a workstream of a graph in another repository, the run its PR links back to. The
 * link is text a writer of this repository can change, so it is only a place to look: that run's
 * graph must put the branch's workstream in this repository, and the PR must be the one the run
 * opened (`pr`), else nothing is done.
 */
async function runOfBranch(
  ctx: RepoContext,
  owner: NonNullable<ReturnType<typeof branchOwner>>,
  pr: { number: number; body: () => Promise<string | null | undefined> },
): Promise<{ driver: RunDriver; runKey: string; elsewhere?: { repo: string; branch: string } } | null> {
  const here = new RunDriver(ctx);
  const own = await currentRun(here, owner.graph);
  if (own) return { driver: here, runKey: own };
  const link = RUN_LINK.exec((await pr.body()) ?? "");
  const fullName = `${ctx.owner}/${ctx.repo}`.toLowerCase();
  if (!link || `${link[1]}/${link[2]}`.toLowerCase() === fullName) return null;
  const driver = new RunDriver({ ...ctx, owner: link[1]!, repo: link[2]! });
  let runKey: string | null;
  try {
    runKey = await currentRun(driver, owner.graph);
  } catch (error) {
    if (statusOf(error) === 404 || statusOf(error) === 403) return null;
    throw error;
  }
  const loaded = runKey ? await driver.load(runKey) : null;
  if (!loaded) return null;
  const input = owner.task ?? resolutionInput({ workstream: owner.workstream! });
  const opened = owner.task
    ? loaded.run.tasks[owner.task]?.pr?.number
    : loaded.run.workstreams[owner.workstream!]?.pr?.number;
  const there = repositoryOfInput(loaded.engine.plan, input)?.toLowerCase();
  if (there !== fullName || opened !== pr.number) return null;
  return { driver, runKey: runKey!, elsewhere: { repo: link[2]!, branch: loaded.run.source.branch } };
}

/**
 * Without an app, a run elsewhere is moved by its own repository's orchestrator only, in its one
 * queue (workflow-elsewhere.ts): the event is handed over to it. Answers whether it was.
 */
async function handedOver(
  ctx: RepoContext,
  found: { elsewhere?: { repo: string; branch: string } },
): Promise<boolean> {
  if (!found.elsewhere || !ctx.config.workflow) return false;
  await dispatchOrchestrator(ctx, found.elsewhere.repo, found.elsewhere.branch);
  return true;
}

const KIND = { cancelled: "cancelled", timed_out: "timed_out" } as const;

/**
 * A task workflow run that ended without success: the attempt's failure, when the run is the
 * attempt's (github/attempt-runs.ts: the task workflow of this repository, dispatched, on the run's
 * branch, and the attempt's bound run once it has one); any other run bearing its name (a fork's PR,
 * an earlier run) changes nothing.
 */
export async function onWorkflowRun(
  ctx: RepoContext,
  payload: Context<"workflow_run.completed">["payload"],
): Promise<void> {
  const run = payload.workflow_run as Context<"workflow_run.completed">["payload"]["workflow_run"] &
    WorkflowRunFacts;
  if (run.path !== `.github/workflows/${ctx.config.taskWorkflow}` || run.conclusion === "success") return;
  // A successful job has already reported (its report step is part of it); anything else is a verdict.
  const named = parseAttemptRunName(run.display_title ?? "");
  if (!named) return;
  const driver = new RunDriver(ctx);
  const loaded = await driver.load(named.run);
  const t = loaded?.run.tasks[named.task];
  if (!loaded || !t) return;
  const why = notAttemptRun(ctx, run, {
    runKey: named.run,
    input: named.task,
    attempt: named.attempt,
    branch: loaded.run.source.branch,
    record: t.attempts[named.attempt - 1],
  });
  if (why) {
    ctx.log(`workflow run ${run.id} is not attempt ${named.attempt} of ${named.task} (${why}): ignored`);
    return;
  }
  const kind = KIND[run.conclusion as keyof typeof KIND] ?? "failed";
  const event: EngineEvent = {
    type: "job_failed",
    task: named.task,
    attempt: named.attempt,
    kind,
    reason: `the job ${run.conclusion ?? "failed"}: ${run.html_url}`,
    // The engine checks it again against the state it writes: the attempt may have been bound since.
    job: String(run.id),
    at: ctx.now(),
  };
  await driver.drive(named.run, [event], { loaded });
}

export async function onPullRequestClosed(
  ctx: RepoContext,
  payload: Context<"pull_request.closed">["payload"],
  ownLogin: () => Promise<string>,
): Promise<void> {
  const { pull_request: pr, repository, sender } = payload;
  // The app records its own merges as it makes them; fork PRs never count (they only borrow a name).
  if (sender.login === (await ownLogin()) || pr.head.repo?.full_name !== repository.full_name) return;
  const owner = branchOwner(pr.head.ref);
  if (!owner) return;
  const found = await runOfBranch(ctx, owner, { number: pr.number, body: async () => pr.body });
  if (!found || (await handedOver(ctx, found))) return;
  const { driver, runKey } = found;
  const ref = { number: pr.number, url: pr.html_url };
  const at = Date.now();
  const event: EngineEvent = owner.workstream
    ? {
        type: pr.merged ? "integration_pr_merged" : "integration_pr_closed",
        workstream: owner.workstream,
        at,
      }
    : { type: pr.merged ? "task_pr_merged" : "task_pr_closed", task: owner.task!, pr: ref, at };
  await driver.drive(runKey, [event]);
}

/**
 * Checks finished on a task or integration PR: the run tries its pending merges again (GitHub's
 * answer names a required check that failed, which fails the task). Only required checks decide a
 * task PR's fate (branch protection and rulesets, https://docs.github.com/en/rest/repos/rules and
 * "About protected branches"): with none required, every check counts, and a failed suite fails it.
 */
export async function onCheckSuite(
  ctx: RepoContext,
  payload: Context<"check_suite.completed">["payload"],
): Promise<void> {
  const suite = payload.check_suite;
  const owner = suite.head_branch ? branchOwner(suite.head_branch) : null;
  if (!owner || suite.pull_requests.length === 0) return;
  const number = suite.pull_requests[0]!.number;
  // In a workstream's repository, the PR's body says where its run lives (no run of the graph here).
  const body = async () =>
    (await ctx.octokit.rest.pulls.get({ owner: ctx.owner, repo: ctx.repo, pull_number: number })).data.body;
  const found = await runOfBranch(ctx, owner, { number, body });
  if (!found || (await handedOver(ctx, found))) return;
  const { driver, runKey } = found;
  const run = await driver.drive(runKey, [], { pending: true });
  // Checks that failed on a task PR GitHub will not merge fail the task, as a failed gate does: a
  // retry continues on its branch with the reason. (A failed check that is not required does not
  // stop the merge above.)
  const failed = suite.conclusion === "failure" || suite.conclusion === "timed_out";
  if (failed && owner.task && run?.tasks[owner.task]?.status === "pr_open") {
    const base = (suite.pull_requests[0] as { base?: { ref?: string } } | undefined)?.base?.ref;
    const policy = base ? await readBranchPolicy(ctx.octokit, ctx.owner, ctx.repo, base) : null;
    if (policy && policy.requiredChecks.length > 0) return;
    const reason = `checks failed on its PR (${suite.conclusion})`;
    await driver.drive(runKey, [{ type: "task_merge_failed", task: owner.task, reason, at: Date.now() }]);
  }
}
