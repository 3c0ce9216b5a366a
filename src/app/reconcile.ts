/**
 * The reconciler: rebuilds the facts from GitHub and feeds the engine what was missed (a webhook
 * never delivered, a job that never reported, a merge whose answer was lost, an integration PR a
 * person merged or closed). Runs on start-up, periodically, on `/agentrelay status`, and in workflow
 * mode on every orchestrator run, where it also reads the reports of jobs that ended (from their
 * runs' artifacts: github/reports.ts). Running it twice is harmless.
 */
import { createHash } from "node:crypto";
import { RunStateDamageError, sayStateDamage } from "../github/damage.ts";
import { runningResolutions } from "../engine/conflicts.ts";
import type { EngineEvent, PullRequest } from "../engine/types.ts";
import { factsOfReport, repositoryOfInput, resolutionInput, subjectOfInput } from "../protocol/resolution.ts";
import { isAttemptRun, type WorkflowRunFacts } from "../github/attempt-runs.ts";
import { readFileAt, type RepoContext, statusOf } from "../github/client.ts";
import { type Loaded, RunDriver } from "../github/driver.ts";
import { adoptionFacts, mergeRecord, sayWentBack } from "../github/merge-record.ts";
import { lostRepositoryWait, repositoryWaitKey, type Wait } from "../github/merges.ts";
import { reportOfRun } from "../github/reports.ts";
import { dispatchInputNames, inputsNotTaken, taskWorkflowWaitKey } from "../github/task-workflow.ts";

/** A dispatched job whose run has not appeared after this long is missing. */
const START_GRACE_MS = 10 * 60_000;

type Job = WorkflowRunFacts & { id: number; status: string | null; conclusion: string | null };

/**
 * `refreshStatus`: the status comment is edited whether due or not. `thorough` (the default; in
 * workflow mode the scheduled run): the run's state is also checked against what GitHub merged
 * (merge-record.ts), and the repository's waiting work is picked up (waiting.ts).
 */
export interface ReconcileOptions {
  refreshStatus?: boolean;
  thorough?: boolean;
}

/** A run reconciled: as it was read, and whether it is still active (unfinished) afterwards. */
export interface ReconciledRun {
  loaded: Loaded;
  active: boolean;
}

/** Reconciles a run (null when there is none). */
export async function reconcileRun(
  driver: RunDriver,
  runKey: string,
  options: ReconcileOptions = {},
): Promise<ReconciledRun | null> {
  const loaded = await driver.load(runKey, { fresh: true });
  if (!loaded) return null;
  if (loaded.run.outcome) return { loaded, active: false };
  const { ctx } = driver;
  const now = ctx.now();
  const facts: EngineEvent[] = [{ type: "tick", at: now }];
  // Tasks the state has running, failed or cancelled whose PR GitHub merged: the state went back.
  const suspects = Object.entries(loaded.run.tasks)
    .filter(([, t]) => t.status === "running" || t.status === "failed" || t.status === "cancelled")
    .map(([task]) => task);
  const record =
    (options.thorough ?? true) && suspects.length > 0
      ? await mergeRecord(ctx, loaded.run, loaded.engine.plan, suspects)
      : null;
  const merged = record?.tasks ?? new Map<string, PullRequest>();
  if (record && merged.size > 0) {
    facts.push(...adoptionFacts(record, now));
    await sayWentBack(ctx, loaded.run, record);
  }
  /**
   * Where an attempt's job runs: the task workflow of its workstream's repository (a graph may span
   * repositories), from that repository's default branch; null while the installation cannot reach it
   * (its work waits, github/effects.ts says so, and nothing is decided about its jobs meanwhile).
   */
  const places = new Map<string, Promise<{ at: RepoContext; branch: string } | null>>();
  /** Whether a repository is reached, kept with the run (the status comment says which one waits). */
  const reach = (fullName: string, wait: Wait | null) => {
    const waits = driver.effects.waits.get(runKey) ?? new Map<string, Wait | null>();
    driver.effects.waits.set(runKey, waits.set(repositoryWaitKey(fullName), wait));
  };
  const placeOf = (fullName: string | null) => {
    if (!fullName) return Promise.resolve({ at: ctx, branch: loaded.run.source.branch });
    const [owner, name] = fullName.split("/") as [string, string];
    let place = places.get(fullName);
    if (!place)
      places.set(
        fullName,
        (place = ctx.octokit.rest.repos.get({ owner, repo: name }).then(
          ({ data }) => {
            reach(fullName, null);
            return { at: { ...ctx, owner, repo: name }, branch: data.default_branch };
          },
          (error: unknown) => {
            const status = statusOf(error);
            if (status !== 404 && status !== 403) throw error;
            reach(fullName, lostRepositoryWait(fullName, status));
            return null;
          },
        )),
      );
    return place;
  };
  const recentRuns = new Map<string, Promise<Job[]>>();
  /** A repository's latest task workflow runs, read once: most jobs of a run are among them. */
  const recent = (at: RepoContext) => {
    const key = `${at.owner}/${at.repo}`;
    let runs = recentRuns.get(key);
    if (!runs)
      recentRuns.set(
        key,
        (runs = at.octokit.rest.actions
          .listWorkflowRuns({
            owner: at.owner,
            repo: at.repo,
            workflow_id: at.config.taskWorkflow,
            event: "workflow_dispatch",
            per_page: 100,
          })
          .then(({ data }) => data.workflow_runs)),
      );
    return runs;
  };
  const stale = new Map<string, Promise<string | null>>();
  /** Whether a repository's task workflow still does not take what the app sends (read once a pass). */
  const staleWorkflow = (at: RepoContext, branch: string) => {
    const fullName = `${at.owner}/${at.repo}`;
    let why = stale.get(fullName);
    if (!why) {
      const path = `.github/workflows/${at.config.taskWorkflow}`;
      const names = dispatchInputNames({
        elsewhere: at.owner !== ctx.owner || at.repo !== ctx.repo,
        workflowMode: ctx.config.workflow !== undefined,
      });
      why = readFileAt(at, path, branch).then((text) =>
        text === null ? "it is missing" : inputsNotTaken(path, text, names),
      );
      stale.set(fullName, why);
    }
    return why;
  };
  /**
   * The job of an attempt (`input` is its `task` input): by its run id, else by its run-name once it
   * had time to appear, either way only a run that is the attempt's (github/attempt-runs.ts), in its
   * workstream's repository; "missing" when no run appeared, null while it may still; "renew" when
   * GitHub refused it and the attempt's deadline nears.
   */
  const jobOf = async (
    input: string,
    attempt: number,
    record: { job?: string | null; dispatchedAt: number; deadline?: number },
  ): Promise<Job | "missing" | "renew" | null> => {
    const place = await placeOf(repositoryOfInput(loaded.engine.plan, input));
    if (!place) return null;
    const { at, branch } = place;
    const of = { runKey, input, attempt, branch, record };
    if (record.job) {
      // In workflow mode every orchestrator run asks: one listing answers for most jobs at once.
      const listed = ctx.config.workflow
        ? (await recent(at)).find((r) => String(r.id) === record.job)
        : undefined;
      let found: Job | null = listed ?? null;
      if (!found)
        try {
          found = (
            await at.octokit.rest.actions.getWorkflowRun({
              owner: at.owner,
              repo: at.repo,
              run_id: Number(record.job),
            })
          ).data;
        } catch (error) {
          if (statusOf(error) !== 404) throw error;
        }
      return found && isAttemptRun(at, found, of) ? found : null;
    }
    // With the app, a job is bound when it takes its first token: until then, it is known by its run-name.
    const named = (await recent(at)).find((r) => isAttemptRun(at, r, of));
    if (named) return named;
    // GitHub refused the dispatch, the task workflow being too old: no run will appear. The attempt
    // waits while the file is still so, and is made again (not counted) once it takes the inputs, or
    // as its deadline nears, before the tick could time it out and count it.
    if (loaded.run.github.waits?.[taskWorkflowWaitKey(`${at.owner}/${at.repo}`)]) {
      if (!(await staleWorkflow(at, branch))) return "missing";
      return record.deadline !== undefined && now >= record.deadline - START_GRACE_MS ? "renew" : null;
    }
    return now - record.dispatchedAt <= START_GRACE_MS ? null : "missing";
  };
  const ended = (job: Job) =>
    job.conclusion === "success"
      ? "the job finished without reporting its result"
      : `the job ended: ${job.conclusion}`;
  /**
   * Workflow mode: the facts of the report the ended job handed over in its run, or why there are
   * none; the run is in its workstream's repository (the job was found there).
   */
  const reported = async (input: string, attempt: number, job: Job): Promise<EngineEvent[] | string> => {
    if (!ctx.config.workflow) return ended(job);
    const at = (await placeOf(repositoryOfInput(loaded.engine.plan, input)))?.at ?? ctx;
    const read = await reportOfRun(at, String(job.id), { run: runKey, task: input, attempt });
    if ("reason" in read) return job.conclusion === "success" ? read.reason : ended(job);
    const subject = subjectOfInput(loaded.engine.plan, input)!;
    const started: EngineEvent =
      "task" in subject
        ? { type: "job_started", task: subject.task, attempt, job: String(job.id), at: now }
        : { type: "resolution_started", ...subject.resolution, n: attempt, job: String(job.id), at: now };
    return [started, ...factsOfReport(subject, read.report, now)];
  };

  for (const [task, t] of Object.entries(loaded.run.tasks)) {
    if (t.status !== "running" || merged.has(task)) continue;
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
    } else if (job === "renew") {
      // Ahead of the tick, which would time the waiting attempt out and count it.
      const reason = "its task workflow still refuses the dispatch";
      facts.unshift({ type: "job_lost", task, attempt, reason, at: now });
    } else if (job !== null && job.status === "completed") {
      const report = await reported(task, attempt, job);
      if (typeof report !== "string") {
        facts.push(...report);
        continue;
      }
      const kind =
        job.conclusion === "cancelled"
          ? "cancelled"
          : job.conclusion === "timed_out"
            ? "timed_out"
            : "failed";
      facts.push({ type: "job_failed", task, attempt, reason: report, kind, job: String(job.id), at: now });
    }
  }
  for (const { subject, record } of runningResolutions(loaded.run, loaded.engine.plan)) {
    const input = resolutionInput(subject);
    const job = await jobOf(input, record.n, record);
    const about = { ...subject, n: record.n, at: now };
    // A resolution's deadline counts as a task's does: renewed ahead of the tick.
    if (job === "renew")
      facts.unshift({
        type: "resolution_lost",
        ...about,
        reason: "its task workflow still refuses the dispatch",
      });
    else if (job === "missing")
      facts.push({ type: "resolution_lost", ...about, reason: "no workflow run appeared for the dispatch" });
    else if (job?.status === "completed") {
      const report = await reported(input, record.n, job);
      if (typeof report !== "string") facts.push(...report);
      else facts.push({ type: "resolution_finished", ...about, ok: false, reason: report });
    }
  }
  // An integration PR left to a person: whether they merged or closed it (the event may be lost).
  for (const [workstream, ws] of Object.entries(loaded.run.workstreams)) {
    if (ws.status !== "pr_open" || !ws.pr) continue;
    const place = await placeOf(repositoryOfInput(loaded.engine.plan, resolutionInput({ workstream })));
    if (!place) continue;
    const { at } = place;
    const { data: pr } = await at.octokit.rest.pulls.get({
      owner: at.owner,
      repo: at.repo,
      pull_number: ws.pr.number,
    });
    if (pr.merged) facts.push({ type: "integration_pr_merged", workstream, at: now });
    else if (pr.state === "closed") facts.push({ type: "integration_pr_closed", workstream, at: now });
  }
  const driven = await driver.drive(runKey, facts, {
    pending: true,
    refreshStatus: options.refreshStatus ?? true,
  });
  return { loaded, active: driven !== null && driven.outcome === null };
}

/** The latest run of each graph with a state branch. */
async function latestRuns(ctx: RepoContext, driver: RunDriver): Promise<string[]> {
  const { data: refs } = await ctx.octokit.rest.git.listMatchingRefs({
    owner: ctx.owner,
    repo: ctx.repo,
    ref: "heads/agentrelay-state/",
  });
  const runs: string[] = [];
  for (const ref of refs) {
    const graph = ref.ref.slice("refs/heads/agentrelay-state/".length);
    const latest = await driver.latestRun(graph);
    if (latest > 0) runs.push(`${graph}/${latest}`);
  }
  return runs;
}

/** The repository's runs reconciled: how many are left active, and what each graph's latest run follows. */
export interface ReconciledRepository {
  active: number;
  followed: FollowedGraph[];
}

/** Every unfinished run of the repository (one per graph with a state branch). */
export async function reconcileRepository(
  ctx: RepoContext,
  options: ReconcileOptions = {},
): Promise<ReconciledRepository> {
  const driver = new RunDriver(ctx);
  const reconciled: ReconciledRepository = { active: 0, followed: [] };
  for (const runKey of await latestRuns(ctx, driver)) {
    // One damaged run is said once and does not stop the others from being repaired (nor counts as ended).
    const run = await reconcileRun(driver, runKey, options).catch(async (error: unknown) => {
      if (!(error instanceof RunStateDamageError)) throw error;
      await sayStateDamage(ctx, error);
      return "damaged" as const;
    });
    if (run === "damaged" || run?.active) reconciled.active++;
    if (run && run !== "damaged") reconciled.followed.push(followedGraph(run.loaded));
  }
  return reconciled;
}

/** Whether any run of the repository is unfinished. */
export async function anyActive(ctx: RepoContext): Promise<boolean> {
  const driver = new RunDriver(ctx);
  for (const runKey of await latestRuns(ctx, driver))
    if ((await driver.load(runKey))?.run.outcome === null) return true;
  return false;
}

/** What a graph's latest run follows: its file, the content it pinned, its params (waiting.ts). */
export interface FollowedGraph {
  path: string;
  /** Git's id of the pinned graph's text, as the contents API names a file's content. */
  blob: string;
  cyberian: boolean;
  params: Record<string, unknown>;
}

const blobId = (text: string) => {
  const bytes = Buffer.from(text);
  return createHash("sha1").update(`blob ${bytes.length}\0`).update(bytes).digest("hex");
};

const followedGraph = (loaded: Loaded): FollowedGraph => ({
  path: loaded.run.source.path,
  blob: blobId(loaded.run.source.text),
  cyberian: Boolean(loaded.engine.plan.graph.cyberian),
  params: loaded.run.source.params ?? {},
});
