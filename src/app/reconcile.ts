/**
 * The reconciler: rebuilds the facts from GitHub and feeds the engine what was missed (a webhook
 * never delivered, a job that never reported, a merge whose answer was lost). Runs on start-up,
 * periodically, and on `/agentrelay status`; running it twice is harmless.
 */
import type { EngineEvent } from "../engine/types.ts";
import { attemptRunName, type RepoContext, statusOf } from "../github/client.ts";
import { RunDriver } from "../github/driver.ts";

/** A dispatched job that has not started after this long is looked for by its run-name. */
const START_GRACE_MS = 10 * 60_000;

export async function reconcileRun(driver: RunDriver, runKey: string): Promise<void> {
  const loaded = await driver.load(runKey, { fresh: true });
  if (!loaded || loaded.run.outcome) return;
  const { ctx } = driver;
  const repo = { owner: ctx.owner, repo: ctx.repo };
  const now = ctx.now();
  const facts: EngineEvent[] = [{ type: "tick", at: now }];
  let recentRuns:
    { display_title: string; status: string | null; conclusion: string | null; id: number }[] | null = null;
  for (const [task, t] of Object.entries(loaded.run.tasks)) {
    if (t.status !== "running") continue;
    const attempt = t.attempts[t.attempt - 1]!;
    let job: { status: string | null; conclusion: string | null } | null = null;
    if (attempt.job) {
      try {
        ({ data: job } = await ctx.octokit.rest.actions.getWorkflowRun({
          ...repo,
          run_id: Number(attempt.job),
        }));
      } catch (error) {
        if (statusOf(error) !== 404) throw error;
      }
    } else if (now - attempt.dispatchedAt > START_GRACE_MS) {
      recentRuns ??= (
        await ctx.octokit.rest.actions.listWorkflowRuns({
          ...repo,
          workflow_id: ctx.config.taskWorkflow,
          event: "workflow_dispatch",
          per_page: 100,
        })
      ).data.workflow_runs;
      job = recentRuns.find((r) => r.display_title === attemptRunName(runKey, task, t.attempt)) ?? null;
      if (!job) {
        facts.push({
          type: "job_lost",
          task,
          attempt: t.attempt,
          reason: "no workflow run appeared for the dispatch",
          at: now,
        });
        continue;
      }
    }
    if (job?.status === "completed") {
      const reason =
        job.conclusion === "success"
          ? "the job finished without reporting its result"
          : `the job ended: ${job.conclusion}`;
      const kind =
        job.conclusion === "cancelled"
          ? "cancelled"
          : job.conclusion === "timed_out"
            ? "timed_out"
            : "failed";
      facts.push({ type: "job_failed", task, attempt: t.attempt, reason, kind, at: now });
    }
  }
  await driver.drive(runKey, facts, { pending: true, refreshStatus: true });
}

/** Every unfinished run of the repository (one per graph with a state branch). */
export async function reconcileRepository(ctx: RepoContext): Promise<void> {
  const { data: refs } = await ctx.octokit.rest.git.listMatchingRefs({
    owner: ctx.owner,
    repo: ctx.repo,
    ref: "heads/agentrelay-state/",
  });
  const driver = new RunDriver(ctx);
  for (const ref of refs) {
    const graph = ref.ref.slice("refs/heads/agentrelay-state/".length);
    const latest = await driver.latestRun(graph);
    if (latest > 0) await reconcileRun(driver, `${graph}/${latest}`);
  }
}
