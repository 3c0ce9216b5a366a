/**
 * Workflow mode across repositories: the orchestrator workflow of a workstream's repository. A graph
 * in another repository puts a workstream here, so its task jobs run here, and a task run's end is
 * known here only: its hand-over dispatches this repository's orchestrator (a job's GITHUB_TOKEN
 * reaches its own repository only), and workflow_run fires only for workflows of the repository the
 * run was in. The run lives in the graph's repository, which the orchestrator's app token reaches
 * (AGENTRELAY_REPOSITORIES names it): this orchestrator hands over in turn, dispatching the graph
 * repository's orchestrator, which reconciles the run there (reconcile.ts reads the job's report
 * from its run here). Every change to a run is then made by its own repository's orchestrator, in
 * its one queue (the workflow's concurrency group is per repository): two repositories' orchestrators
 * never carry out the same owed effect at once.
 *
 * The task run's name only says where to look (a writer of this repository can dispatch the task
 * workflow with any inputs): the run must be one of a repository the token was minted for, and its
 * graph must put the task's workstream in this repository, else nothing is done. A hand-over more
 * than needed only makes the graph's orchestrator reconcile once more, which is harmless. A PR of
 * such a workstream merged or closed, or its checks finished (outcomes.ts), is handed over the same
 * way: the graph's reconciler finds what happened to it.
 */
import { parseAttemptRunName, type RepoContext, statusOf } from "../github/client.ts";
import { RunDriver } from "../github/driver.ts";
import { repositoryOfInput } from "../protocol/resolution.ts";

/** The orchestrator workflow (`agentrelay init --no-app` writes it under .github/workflows/). */
const ORCHESTRATOR_WORKFLOW = "agentrelay.yml";

/** The task run an event is about: the hand-over's `task-run`, or the run workflow_run says completed. */
async function taskRunOf(
  ctx: RepoContext,
  name: string,
  payload: Record<string, unknown>,
): Promise<{ display_title?: string | null; path?: string } | null> {
  if (name === "workflow_run") return (payload.workflow_run as { path?: string } | undefined) ?? null;
  if (name !== "workflow_dispatch") return null;
  const input = (payload.inputs as Record<string, unknown> | undefined)?.["task-run"];
  if (typeof input !== "string" || !/^[1-9][0-9]{0,15}$/.test(input)) return null;
  try {
    const { data } = await ctx.octokit.rest.actions.getWorkflowRun({
      owner: ctx.owner,
      repo: ctx.repo,
      run_id: Number(input),
    });
    return data;
  } catch (error) {
    if (statusOf(error) === 404) return null;
    throw error;
  }
}

/**
 * Hands the event's task run of this repository over to the orchestrator of the repository its run
 * lives in, when that run's graph puts the task's workstream here. `minted`: the repositories the
 * app's token was minted for (names of this repository's owner). Answers `OWNER/NAME RUN`, or null.
 */
export async function handOverElsewhere(
  ctx: RepoContext,
  name: string,
  payload: Record<string, unknown>,
  minted: string[],
): Promise<string | null> {
  const own = `${ctx.owner}/${ctx.repo}`.toLowerCase();
  const others = minted.filter((n) => n.toLowerCase() !== ctx.repo.toLowerCase());
  if (others.length === 0) return null;
  const taskRun = await taskRunOf(ctx, name, payload);
  if (!taskRun || taskRun.path !== `.github/workflows/${ctx.config.taskWorkflow}`) return null;
  const named = parseAttemptRunName(taskRun.display_title ?? "");
  if (!named) return null;
  for (const repo of others) {
    const driver = new RunDriver({ ...ctx, owner: ctx.owner, repo });
    let loaded: Awaited<ReturnType<RunDriver["load"]>> = null;
    try {
      loaded = await driver.load(named.run, { fresh: true });
    } catch (error) {
      if (statusOf(error) !== 404 && statusOf(error) !== 403) throw error;
    }
    if (!loaded || repositoryOfInput(loaded.engine.plan, named.task)?.toLowerCase() !== own) continue;
    await dispatchOrchestrator(ctx, repo, loaded.run.source.branch);
    ctx.log(
      `${named.task} of ${named.run} works here; its run lives in ${ctx.owner}/${repo}: handed over to its orchestrator`,
    );
    return `${ctx.owner}/${repo} ${named.run}`;
  }
  return null;
}

/**
 * Starts the orchestrator workflow of `repo` (this one's owner's) on `branch`, the graph's default
 * branch where its run started: it reconciles its runs. With the app's token a dispatch starts a
 * workflow run (GITHUB_TOKEN's dispatches do too: they are the documented exception).
 */
export async function dispatchOrchestrator(ctx: RepoContext, repo: string, branch: string): Promise<void> {
  await ctx.octokit.rest.actions.createWorkflowDispatch({
    owner: ctx.owner,
    repo,
    workflow_id: ORCHESTRATOR_WORKFLOW,
    ref: branch,
    inputs: {},
  });
  ctx.log(`handed over to the orchestrator of ${ctx.owner}/${repo}`);
}
