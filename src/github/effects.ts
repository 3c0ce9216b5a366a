/**
 * Carries out the engine's effects on GitHub and answers with the facts they produced. Every call is
 * safe to repeat: a create that answers "already exists" is looked up and counts as done, a merge
 * that GitHub refuses because checks are pending waits (the next check-suite event or the reconciler
 * tries again), and a merge that already happened is recognised. Merges use a method the repository
 * and the branch's rules allow (branch-policy.ts). Whatever GitHub refuses that is not a race leaves a
 * one-line reason (`waits`, shown on the status comment and the task's check run), never a silent wait.
 * Each effect acts in its workstream's repository (`at`): a graph may span repositories.
 */
import { recordsOf } from "../engine/conflicts.ts";
import type { EngineEffect, EngineEvent, PullRequest } from "../engine/types.ts";
import type { Engine } from "../engine/engine.ts";
import { integrationBranch, repositoryFullName, taskBranch } from "../graph/model.ts";
import { isAttemptRun } from "./attempt-runs.ts";
import { issueUrl, jobUrl, messageOf, type RepoContext, statusOf } from "./client.ts";
import type { HostedRun } from "./hosted-run.ts";
import { lostRepositoryWait, type Merged, Merges, repositoryWaitKey, type Wait, waitKey } from "./merges.ts";
import { subjectOf } from "../plan/resolution.ts";
import { resolutionInput, tierOfInput } from "../protocol/resolution.ts";
import { landIntegration } from "./land-integration.ts";
import { landedPr, openPr } from "./open-pr.ts";
import { startChecksOfRetry } from "./retry-checks.ts";
import { dispatchInputs, dispatchTaskWorkflow, staleTaskWorkflowRefusal } from "./task-workflow.ts";
import { taskWorkflowWaitKey } from "./task-workflow.ts";
import { integrationPrBody, integrationPrTitle, taskPrBody, taskPrTitle } from "./render.ts";

type Facts = Promise<EngineEvent[]>;

/** Secret names the task workflow can resolve (`secrets[inputs.credential]`). */
const SECRET_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,99}$/;

/** The job kind each landing effect starts (a resolution has none). */
const LANDING_KINDS = {
  resolve_conflicts: undefined,
  verify_integration: "verify",
  repair_integration: "repair",
} as const;

export class GitHubEffects {
  private readonly merges: Merges;
  /** The effects of the other repositories a run's workstreams live in, by `owner/name` in lower case. */
  private readonly elsewhere = new Map<string, GitHubEffects>();
  /** Another repository's default branch, where its task workflow runs (read once). */
  private defaultBranch: string | null = null;
  /** Why the installation cannot reach this repository (null: it can; undefined: not read yet). */
  private lost: Wait | null | undefined;
  /** The graph's repository (`OWNER/NAME`), where the run lives, for the effects of another one. */
  private runRepository: string | null = null;
  /** Look for a PR before opening it: a held report comes again, and a refused create costs a write. */
  lookBeforeOpening = false;

  constructor(
    private readonly ctx: RepoContext,
    /**
     * Waits this handler's effects found, by run and waitKey, or null where one ended: the driver keeps
     * them with the run, for the status comment and the check runs (shared by every repository's).
     */
    readonly waits = new Map<string, Map<string, Wait | null>>(),
    /** False for another repository than the graph's: the run's own commit is not there. */
    private readonly own = true,
  ) {
    this.merges = new Merges(ctx);
  }

  private get repo() {
    return { owner: this.ctx.owner, repo: this.ctx.repo };
  }

  /**
   * The effects of the repository an effect acts in (its workstream's, engine/run-edit.ts): this
   * one's for the graph's own, else that repository's, with the same installation's client (access.ts
   * checked that it reaches it before the run started).
   */
  at(engine: Engine, effect: EngineEffect): GitHubEffects {
    const fullName = effect.repository ? repositoryFullName(engine.plan.graph, effect.repository) : null;
    if (!fullName || fullName.toLowerCase() === `${this.ctx.owner}/${this.ctx.repo}`.toLowerCase())
      return this;
    let effects = this.elsewhere.get(fullName.toLowerCase());
    if (!effects) {
      const [owner, repo] = fullName.split("/") as [string, string];
      effects = new GitHubEffects({ ...this.ctx, owner, repo }, this.waits, false);
      effects.runRepository = `${this.ctx.owner}/${this.ctx.repo}`;
      this.elsewhere.set(fullName.toLowerCase(), effects);
    }
    effects.lookBeforeOpening = this.lookBeforeOpening;
    return effects;
  }

  /**
   * Whether the installation reaches this repository now, read once per handler (always, for the
   * graph's own). When it does not (a person took the repository out of the app's installation mid-run),
   * the run keeps one line saying so, and the effects wait: they are owed still, and carried out by
   * the next handler or the reconciler once access returns, so nothing is lost.
   */
  private async reachable(run: HostedRun): Promise<boolean> {
    if (this.own) return true;
    const fullName = `${this.ctx.owner}/${this.ctx.repo}`;
    if (this.lost === undefined) {
      try {
        this.defaultBranch = (await this.ctx.octokit.rest.repos.get(this.repo)).data.default_branch;
        this.lost = null;
      } catch (error) {
        const status = statusOf(error);
        if (status !== 404 && status !== 403) throw error;
        this.lost = lostRepositoryWait(fullName, status);
      }
    }
    this.setWait(run, repositoryWaitKey(fullName), this.lost);
    return this.lost === null;
  }

  /** Whether this handler found the merge of PR `number` waiting only for required checks still running. */
  waitsOnRunningChecks = (number: number): boolean => this.merges.checksRunning.has(number);

  /** A repeatable effect (the engine driver's REPEATABLE), on the run state being decided. */
  async repeatable(effect: EngineEffect, run: HostedRun, engine: Engine): Facts {
    const where = this.at(engine, effect);
    if (where !== this) return (await where.reachable(run)) ? where.repeatable(effect, run, engine) : [];
    const at = this.ctx.now();
    const graph = run.graph;
    switch (effect.type) {
      case "prepare_workstream": {
        const ws = engine.plan.workstreams.get(effect.workstream)!;
        const failed = (reason: string): EngineEvent[] => [
          { type: "workstream_prepare_failed", workstream: ws.id, reason, at },
        ];
        try {
          const sha =
            this.startingPoint(run, engine, ws.baseBranch) ??
            (await this.ctx.octokit.rest.git.getRef({ ...this.repo, ref: `heads/${ws.baseBranch}` })).data
              .object.sha;
          await this.ctx.octokit.rest.git.createRef({
            ...this.repo,
            ref: `refs/heads/${integrationBranch(graph, ws.id)}`,
            sha,
          });
        } catch (error) {
          if (statusOf(error) === 404) return failed(`the base branch '${ws.baseBranch}' does not exist`);
          // "Reference already exists": prepared before (a retried call, a resumed run).
          if (statusOf(error) !== 422) throw error;
        }
        return [{ type: "workstream_prepared", workstream: ws.id, at }];
      }
      case "open_task_pr": {
        const task = engine.plan.tasks.get(effect.task)!;
        const opened = await openPr(
          this.ctx,
          taskBranch(graph, task.id),
          integrationBranch(graph, task.workstreamId),
          taskPrTitle(task),
          taskPrBody(engine.plan, run, task.id, (job) => jobUrl(this.ctx, job), this.runUrl(run)),
          this.lookBeforeOpening,
        );
        this.waited(run, { task: task.id }, opened);
        if (opened === "empty")
          return [
            { type: "task_merge_failed", task: task.id, reason: "the task branch has no new commits", at },
          ];
        if ("wait" in opened) return [];
        return "reason" in opened
          ? [{ type: "task_merge_failed", task: task.id, reason: opened.reason, at }]
          : [{ type: "task_pr_opened", task: task.id, pr: opened, at }];
      }
      case "merge_task_pr": {
        const task = engine.plan.tasks.get(effect.task)!;
        await startChecksOfRetry(this.ctx, run, effect.task, effect.pr, taskBranch(graph, task.id));
        const merged = await this.merges.merge(
          effect.pr,
          `Merge task ${effect.task}`,
          integrationBranch(graph, task.workstreamId),
          taskBranch(graph, task.id),
        );
        this.waited(run, { task: effect.task }, merged);
        if (merged === "merged") return [{ type: "task_pr_merged", task: effect.task, pr: effect.pr, at }];
        // Closed by someone: the same fact as the closing event's, should that event never arrive.
        if (merged === "closed") return [{ type: "task_pr_closed", task: effect.task, pr: effect.pr, at }];
        if (merged === "conflicted") {
          const echo = effect.resolutions !== undefined ? { resolutions: effect.resolutions } : {};
          return [{ type: "task_conflicted", task: effect.task, files: [], ...echo, at }];
        }
        return typeof merged === "string" || "wait" in merged
          ? []
          : [{ type: "task_merge_failed", task: effect.task, reason: merged.reason, at }];
      }
      case "open_integration_pr": {
        const ws = engine.plan.workstreams.get(effect.workstream)!;
        const head = integrationBranch(graph, ws.id);
        const landed = await landedPr(this.ctx, head, ws.mergeTargetBranch);
        if (landed) return [{ type: "integration_pr_merged", workstream: ws.id, at, ...landed }];
        const behind = await this.merges.bringUpToDate(head, ws.mergeTargetBranch);
        const opened = await openPr(
          this.ctx,
          head,
          ws.mergeTargetBranch,
          integrationPrTitle(ws.id),
          integrationPrBody(engine.plan, run, ws.id, undefined, this.runRepository && this.runUrl(run)),
          this.lookBeforeOpening,
        );
        // GitHub refuses a PR with nothing in it: the target already has the workstream's work (a person
        // merged it), which agentrelay counts as a skipped integration.
        this.waited(
          run,
          { workstream: ws.id },
          typeof opened === "object" && !("wait" in opened) && behind ? { wait: behind } : opened,
        );
        if (opened === "empty") return [{ type: "integration_skipped", workstream: ws.id, at }];
        if ("wait" in opened) return [];
        if ("reason" in opened)
          return [{ type: "integration_failed", workstream: ws.id, reason: opened.reason, at }];
        return [{ type: "integration_pr_opened", workstream: ws.id, pr: opened, at }];
      }
      case "merge_integration_pr":
        return landIntegration(
          {
            ctx: this.ctx,
            merges: this.merges,
            waited: (answer) => this.waited(run, { workstream: effect.workstream }, answer),
          },
          engine.plan,
          effect,
          integrationBranch(graph, effect.workstream),
          at,
        );
      default:
        throw new Error(`effect '${effect.type}' is not repeatable`);
    }
  }

  /** The run's tracking issue, in the graph's repository (which may not be this one). */
  private runUrl = (run: HostedRun) =>
    issueUrl(this.runRepository ?? `${this.ctx.owner}/${this.ctx.repo}`, run.github.trackingIssue);

  /** Starts the attempt's job: a workflow_dispatch of the task workflow with opaque inputs only. */
  async dispatch(run: HostedRun, engine: Engine, task: string, attempt: number, stateVersion: string): Facts {
    const at = this.ctx.now();
    const started = await this.startJob(run, engine, task, attempt, stateVersion);
    if ("reason" in started) return [{ type: "job_failed", task, attempt, reason: started.reason, at }];
    const job = this.boundAtDispatch(started.job);
    return job ? [{ type: "job_dispatched", task, attempt, job, at }] : [];
  }

  /** Starts a resolution's job (or an integration's verification or repair), its subject in the `task` input. */
  async dispatchResolution(
    run: HostedRun,
    engine: Engine,
    effect: Extract<
      EngineEffect,
      { type: "resolve_conflicts" | "verify_integration" | "repair_integration" }
    >,
    stateVersion: string,
  ): Facts {
    const at = this.ctx.now();
    const subject = subjectOf({ ...effect, kind: LANDING_KINDS[effect.type] });
    const started = await this.startJob(run, engine, resolutionInput(subject), effect.n, stateVersion);
    if ("reason" in started)
      return [
        { type: "resolution_finished", ...subject, n: effect.n, ok: false, reason: started.reason, at },
      ];
    const job = this.boundAtDispatch(started.job);
    return job ? [{ type: "resolution_dispatched", ...subject, n: effect.n, job, at }] : [];
  }

  /**
   * The run GitHub created for a dispatch, when it must be written at once. Without the app, it is how
   * the orchestrator finds the job's report, and only that run's report counts. With the app, the
   * attempt is bound when its job takes its first token (job_started records the run, and only a run
   * bearing the attempt's run-name may take it): writing the dispatch's answer as well would cost a
   * state write per attempt out of GitHub's 500 an hour (write-pacing.ts).
   */
  private boundAtDispatch(job: string | null): string | null {
    return this.ctx.config.workflow ? job : null;
  }

  /** The workflow_dispatch of an attempt: the run GitHub created for it (when GitHub says), or why it could not start. */
  private async startJob(
    run: HostedRun,
    engine: Engine,
    task: string,
    attempt: number,
    stateVersion: string,
  ): Promise<{ job: string | null } | { reason: string }> {
    // A repository the installation lost: the dispatch waits (one line), the reconciler makes it again.
    if (!(await this.reachable(run))) return { job: null };
    const credential = engine.plan.graph.settings.anthropicCredential ?? "";
    if (credential && !SECRET_NAME.test(credential))
      return {
        reason: `anthropic_credential '${credential}' is not a valid secret name (letters, digits and _)`,
      };
    const inputs = dispatchInputs({
      run: run.runKey,
      task,
      attempt: String(attempt),
      "state-version": stateVersion,
      credential,
      // A job in a workstream's repository finds its run in the graph's. Without an app, the task
      // workflow mints a token that reads it there (create-github-app-token takes the name alone), and
      // runs the job of the task's tier, whose GITHUB_TOKEN holds that tier's permissions (checked).
      "run-repository": this.runRepository,
      "run-repository-name": this.ctx.config.workflow ? (this.runRepository?.split("/")[1] ?? null) : null,
      tier: this.ctx.config.workflow ? tierOfInput(engine.plan, task) : null,
    });
    const fullName = `${this.ctx.owner}/${this.ctx.repo}`;
    try {
      const job = await dispatchTaskWorkflow(this.ctx, await this.workflowBranch(run), inputs);
      this.setWait(run, taskWorkflowWaitKey(fullName), null);
      return { job };
    } catch (error) {
      if (statusOf(error) === undefined || statusOf(error)! >= 500) throw error;
      // A task workflow older than the inputs the app sends: nothing started, so the attempt is not
      // spent; the run says what to do, and the reconciler dispatches again once it is done.
      const { taskWorkflow } = this.ctx.config;
      const stale = staleTaskWorkflowRefusal(error, fullName, taskWorkflow);
      if (!stale) return { reason: `could not start ${taskWorkflow}: ${messageOf(error)}` };
      this.setWait(run, taskWorkflowWaitKey(fullName), stale);
      return { job: null };
    }
  }

  /** Keeps `wait` (null: it ended) with the run, for the status comment (the driver writes it). */
  private setWait(run: HostedRun, key: string, wait: Wait | null): void {
    let waits = this.waits.get(run.runKey);
    if (!waits) this.waits.set(run.runKey, (waits = new Map()));
    waits.set(key, wait);
  }

  /**
   * Where the task workflow runs from: the graph's default branch, which the run was started from; in
   * another repository, that repository's default branch (where GitHub reads workflow_dispatch's
   * workflow: https://docs.github.com/en/actions/using-workflows/events-that-trigger-workflows#workflow_dispatch).
   */
  private async workflowBranch(run: HostedRun): Promise<string> {
    if (this.own) return run.source.branch;
    this.defaultBranch ??= (await this.ctx.octokit.rest.repos.get(this.repo)).data.default_branch;
    return this.defaultBranch;
  }

  /** Cancels the attempt's workflow run (found by its id, else by its run-name). */
  async cancel(run: HostedRun, task: string, attempt: number): Promise<void> {
    await this.cancelJob(run, task, attempt, run.tasks[task]?.attempts[attempt - 1]);
  }

  /** Cancels a resolution's workflow run. */
  async cancelResolution(
    run: HostedRun,
    effect: Extract<EngineEffect, { type: "cancel_resolution" }>,
  ): Promise<void> {
    const subject = subjectOf(effect);
    const record = recordsOf(run, subject)?.[effect.n - 1];
    await this.cancelJob(run, resolutionInput(subject), effect.n, record);
  }

  /**
   * Cancels the workflow run of an attempt (`input`: its `task` input), by its id or else the run that
   * is the attempt's by its run-name (attempt-runs.ts: never another run bearing the name).
   */
  private async cancelJob(
    run: HostedRun,
    input: string,
    attempt: number,
    record: { job?: string | null; dispatchedAt: number } | undefined,
  ): Promise<void> {
    let id = record?.job ?? null;
    if (!id) {
      const { data } = await this.ctx.octokit.rest.actions.listWorkflowRuns({
        ...this.repo,
        workflow_id: this.ctx.config.taskWorkflow,
        event: "workflow_dispatch",
        per_page: 100,
      });
      const of = { runKey: run.runKey, input, attempt, branch: run.source.branch, record };
      id =
        data.workflow_runs
          .find((r) => r.status !== "completed" && isAttemptRun(this.ctx, r, of))
          ?.id.toString() ?? null;
    }
    if (!id) return;
    try {
      await this.ctx.octokit.rest.actions.cancelWorkflowRun({ ...this.repo, run_id: Number(id) });
    } catch (error) {
      if (statusOf(error) !== 409) throw error; // already finished
    }
  }

  /** Reset: the task's PR is closed and its branch deleted, so the next attempt starts afresh. */
  async reset(run: HostedRun, task: string, pr: PullRequest | null): Promise<void> {
    if (pr)
      await this.ctx.octokit.rest.pulls.update({ ...this.repo, pull_number: pr.number, state: "closed" });
    try {
      await this.ctx.octokit.rest.git.deleteRef({
        ...this.repo,
        ref: `heads/${taskBranch(run.graph, task)}`,
      });
    } catch (error) {
      if (![404, 422].includes(statusOf(error) ?? 0)) throw error;
    }
  }

  /**
   * Where a new integration branch starts without asking GitHub: the commit a merge of this handler
   * just made into its base, else the run's own commit while the run has merged nothing into that
   * branch (a run starts its workstreams from the commit that started it, as its graph is read there).
   */
  private startingPoint(run: HostedRun, engine: Engine, base: string): string | null {
    const merged = this.merges.mergedInto.get(base);
    if (merged) return merged;
    if (!this.own || base !== run.source.branch) return null;
    const mergedIntoBase = Object.entries(run.workstreams).some(
      ([id, ws]) =>
        ws.integration === "merged" && engine.plan.workstreams.get(id)?.mergeTargetBranch === base,
    );
    return mergedIntoBase ? null : run.source.commit;
  }

  /** Records the wait an effect's answer says, or that its subject waits no more. */
  private waited(
    run: HostedRun,
    subject: { task: string } | { workstream: string },
    answer: Merged | PullRequest | "empty" | { reason: string } | { wait: Wait },
  ): void {
    let waits = this.waits.get(run.runKey);
    if (!waits) this.waits.set(run.runKey, (waits = new Map()));
    waits.set(waitKey(subject), typeof answer === "object" && "wait" in answer ? answer.wait : null);
  }
}
