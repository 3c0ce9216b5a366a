/**
 * The reconciler: rebuilds the facts from GitHub and feeds the engine what was missed (a webhook
 * never delivered, a job that never reported, a merge whose answer was lost). Runs on start-up,
 * periodically, and on `/agentrelay status`; running it twice is harmless.
 */
import { runningResolutions } from "../engine/conflicts.ts";
import type { EngineEvent } from "../engine/types.ts";
import { resolutionInput } from "../protocol/resolution.ts";
import { attemptRunName, type RepoContext, statusOf } from "../github/client.ts";
import { RunDriver } from "../github/driver.ts";

/** A dispatched job that has not started after this long is looked for by its run-name. */
const START_GRACE_MS = 10 * 60_000;

type Job = { status: string | null; conclusion: string | null };

export async function reconcileRun(driver: RunDriver, runKey: string): Promise<void> {
  const loaded = await driver.load(runKey, { fresh: true });
  if (!loaded || loaded.run.outcome) return;
  const { ctx } = driver;
  const repo = { owner: ctx.owner, repo: ctx.repo };
  const now = ctx.now();
  const facts: EngineEvent[] = [{ type: "tick", at: now }];
  let recentRuns: (Job & { display_title: string })[] | null = null;
  /**
   * The job of an attempt (`input` is its `task` input): by its run id, else by its run-name once it
   * had time to appear; "missing" when no run appeared, null while it may still.
   */
  const jobOf = async (
    input: string,
    attempt: number,
    record: { job?: string | null; dispatchedAt: number },
  ): Promise<Job | "missing" | null> => {
    if (record.job) {
      try {
        return (await ctx.octokit.rest.actions.getWorkflowRun({ ...repo, run_id: Number(record.job) })).data;
      } catch (error) {
        if (statusOf(error) !== 404) throw error;
        return null;
      }
    }
    if (now - record.dispatchedAt <= START_GRACE_MS) return null;
    recentRuns ??= (
      await ctx.octokit.rest.actions.listWorkflowRuns({
        ...repo,
        workflow_id: ctx.config.taskWorkflow,
        event: "workflow_dispatch",
        per_page: 100,
      })
    ).data.workflow_runs;
    return recentRuns.find((r) => r.display_title === attemptRunName(runKey, input, attempt)) ?? "missing";
  };
  const ended = (job: Job) =>
    job.conclusion === "success"
      ? "the job finished without reporting its result"
      : `the job ended: ${job.conclusion}`;

  for (const [task, t] of Object.entries(loaded.run.tasks)) {
    if (t.status !== "running") continue;
    const job = await jobOf(task, t.attempt, t.attempts[t.attempt - 1]!);
    const attempt = t.attempt;
    if (job === "missing") {
      facts.push({
        type: "job_lost",
        task,
        attempt,
        reason: "no workflow run appeared for the dispatch",
        at: now,
      });
    } else if (job?.status === "completed") {
      const kind =
        job.conclusion === "cancelled"
          ? "cancelled"
          : job.conclusion === "timed_out"
            ? "timed_out"
            : "failed";
      facts.push({ type: "job_failed", task, attempt, reason: ended(job), kind, at: now });
    }
  }
  for (const { subject, record } of runningResolutions(loaded.run, loaded.engine.plan)) {
    const job = await jobOf(resolutionInput(subject), record.n, record);
    const about = { ...subject, n: record.n, at: now };
    if (job === "missing")
      facts.push({ type: "resolution_lost", ...about, reason: "no workflow run appeared for the dispatch" });
    else if (job?.status === "completed")
      facts.push({ type: "resolution_finished", ...about, ok: false, reason: ended(job) });
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
