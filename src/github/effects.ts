/**
 * Carries out the engine's effects on GitHub and answers with the facts they produced. Every call is
 * safe to repeat: a create that answers "already exists" is looked up and counts as done, a merge
 * that GitHub refuses because checks are pending waits (the next check-suite event or the reconciler
 * tries again), and a merge that already happened is recognised. Merges use a method the repository
 * and the branch's rules allow (branch-policy.ts). Whatever GitHub refuses that is not a race leaves a
 * one-line reason (`waits`, shown on the status comment and the task's check run), never a silent wait.
 */
import { recordsOf } from "../engine/conflicts.ts";
import { repairsChecks } from "../engine/verification.ts";
import type { EngineEffect, EngineEvent, PullRequest } from "../engine/types.ts";
import type { Engine } from "../engine/engine.ts";
import { integrationBranch, taskBranch } from "../graph/model.ts";
import { isAttemptRun } from "./attempt-runs.ts";
import { jobUrl, messageOf, type RepoContext, statusOf, validationDetails } from "./client.ts";
import type { HostedRun } from "./hosted-run.ts";
import { type Merged, Merges, oneLine, refusal, type Wait, waitKey } from "./merges.ts";
import { subjectOf } from "../plan/resolution.ts";
import { resolutionInput, tierOfInput } from "../protocol/resolution.ts";
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
  /**
   * Waits this handler's effects found, by run and waitKey, or null where one ended: the driver keeps
   * them with the run, for the status comment and the check runs.
   */
  readonly waits = new Map<string, Map<string, Wait | null>>();
  /** Look for a PR before opening it: a held report comes again, and a refused create costs a write. */
  lookBeforeOpening = false;

  constructor(private readonly ctx: RepoContext) {
    this.merges = new Merges(ctx);
  }

  private get repo() {
    return { owner: this.ctx.owner, repo: this.ctx.repo };
  }

  /** Whether this handler found the merge of PR `number` waiting only for required checks still running. */
  waitsOnRunningChecks = (number: number): boolean => this.merges.checksRunning.has(number);

  /** A repeatable effect (the engine driver's REPEATABLE), on the run state being decided. */
  async repeatable(effect: EngineEffect, run: HostedRun, engine: Engine): Facts {
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
        const opened = await this.openPr(
          taskBranch(graph, task.id),
          integrationBranch(graph, task.workstreamId),
          taskPrTitle(task),
          taskPrBody(engine.plan, run, task.id, (job) => jobUrl(this.ctx, job)),
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
        await this.startChecksOfRetry(run, effect.task, effect.pr, taskBranch(graph, task.id));
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
        const behind = await this.merges.bringUpToDate(head, ws.mergeTargetBranch);
        const opened = await this.openPr(
          head,
          ws.mergeTargetBranch,
          integrationPrTitle(ws.id),
          integrationPrBody(engine.plan, run, ws.id),
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
      case "merge_integration_pr": {
        const target = engine.plan.workstreams.get(effect.workstream)!.mergeTargetBranch;
        const { verified } = effect;
        if (verified) {
          // The tree that lands must be the one verified: the target where it was (the merge API pins
          // only the head, with `sha`). A merge landing between this read and the merge is GitHub's
          // 405 "Base branch was modified", asked again, which then finds the target moved.
          const moved = await this.targetMoved(target, verified.base);
          if (moved)
            return [{ type: "integration_unverified", workstream: effect.workstream, reason: moved, at }];
        }
        const merged = await this.merges.merge(
          effect.pr,
          `Integrate workstream ${effect.workstream}`,
          target,
          integrationBranch(graph, effect.workstream),
          verified?.head,
        );
        this.waited(run, { workstream: effect.workstream }, merged);
        if (merged === "merged") {
          const landed = this.merges.mergedInto.get(target);
          // Never silently: a target that moved between the check and the merge is said, at once.
          const unverified =
            verified && landed && !(await this.merges.landedAsVerified(landed, verified))
              ? `${target} moved between the check and the merge: ${landed.slice(0, 7)} holds a tree nobody verified (the gates passed with ${target} at ${verified.base.slice(0, 7)}); run the gates on ${target}`
              : undefined;
          return [
            {
              type: "integration_pr_merged",
              workstream: effect.workstream,
              at,
              ...(unverified ? { unverified } : {}),
            },
          ];
        }
        if (merged === "moved")
          return [
            {
              type: "integration_unverified",
              workstream: effect.workstream,
              reason: "its branch moved since it was verified",
              at,
            },
          ];
        if (
          typeof merged === "object" &&
          "failedOn" in merged &&
          repairsChecks(engine.plan, effect.workstream)
        ) {
          // GitHub refuses the merge for a required check that failed on the head: it is repaired.
          const head = merged.failedOn!;
          const output = await this.merges.failedChecks(target, head);
          return [
            {
              type: "integration_checks_failed",
              workstream: effect.workstream,
              head,
              output: output ?? merged.reason,
              at,
            },
          ];
        }
        if (merged === "closed")
          return [{ type: "integration_pr_closed", workstream: effect.workstream, at }];
        if (merged === "conflicted") {
          const echo = effect.resolutions !== undefined ? { resolutions: effect.resolutions } : {};
          return [{ type: "integration_conflicted", workstream: effect.workstream, files: [], ...echo, at }];
        }
        return typeof merged === "string" || "wait" in merged
          ? []
          : [{ type: "integration_merge_failed", workstream: effect.workstream, reason: merged.reason, at }];
      }
      default:
        throw new Error(`effect '${effect.type}' is not repeatable`);
    }
  }

  /** Starts the attempt's job: a workflow_dispatch of the task workflow with opaque inputs only. */
  async dispatch(run: HostedRun, engine: Engine, task: string, attempt: number, stateVersion: string): Facts {
    const at = this.ctx.now();
    const started = await this.startJob(run, engine, task, attempt, stateVersion);
    if ("reason" in started) return [{ type: "job_failed", task, attempt, reason: started.reason, at }];
    const job = this.boundAtDispatch(started.job);
    return job ? [{ type: "job_dispatched", task, attempt, job, at }] : [];
  }

  /**
   * Starts a resolution's job (or an integration branch's verification or repair): the task workflow,
   * its subject in the `task` input (protocol/resolution.ts).
   */
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
    const credential = engine.plan.graph.settings.anthropicCredential ?? "";
    if (credential && !SECRET_NAME.test(credential))
      return {
        reason: `anthropic_credential '${credential}' is not a valid secret name (letters, digits and _)`,
      };
    const inputs: Record<string, string> = {
      run: run.runKey,
      task,
      attempt: String(attempt),
      "state-version": stateVersion,
      credential,
    };
    // Without an app to mint the attempt's token, the task workflow runs the job of the task's tier,
    // whose GITHUB_TOKEN holds that tier's permissions (the job checks the tier against the graph).
    if (this.ctx.config.workflow) inputs.tier = tierOfInput(engine.plan, task);
    const request = {
      ...this.repo,
      workflow_id: this.ctx.config.taskWorkflow,
      ref: run.source.branch,
      inputs,
    };
    const route = "POST /repos/{owner}/{repo}/actions/workflows/{workflow_id}/dispatches";
    try {
      try {
        const { data } = await this.ctx.octokit.request(route, { ...request, return_run_details: true });
        const id = (data as { workflow_run_id?: number } | undefined)?.workflow_run_id;
        return { job: id ? String(id) : null };
      } catch (error) {
        // GitHub Enterprise Server before the run-details change refuses the unknown field: ask without it
        // (the job is then known by its run-name when it asks for its token).
        if (![400, 422].includes(statusOf(error) ?? 0) || !/return_run_details/.test(messageOf(error)))
          throw error;
        await this.ctx.octokit.request(route, request);
        return { job: null };
      }
    } catch (error) {
      if (statusOf(error) === undefined || statusOf(error)! >= 500) throw error;
      return { reason: `could not start ${this.ctx.config.taskWorkflow}: ${messageOf(error)}` };
    }
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
    if (base !== run.source.branch) return null;
    const mergedIntoBase = Object.entries(run.workstreams).some(
      ([id, ws]) =>
        ws.integration === "merged" && engine.plan.workstreams.get(id)?.mergeTargetBranch === base,
    );
    return mergedIntoBase ? null : run.source.commit;
  }

  private async openPr(
    head: string,
    base: string,
    title: string,
    body: string,
  ): Promise<PullRequest | "empty" | { reason: string } | { wait: Wait }> {
    if (this.lookBeforeOpening) {
      const found = await this.openPrOf(head, base);
      if (found) return found;
    }
    try {
      const { data } = await this.ctx.octokit.rest.pulls.create({
        ...this.repo,
        head,
        base,
        title,
        body,
        maintainer_can_modify: false,
      });
      return { number: data.number, url: data.html_url };
    } catch (error) {
      const refused = refusal(error, this.ctx);
      if (refused) {
        const setting = /not permitted to create or approve pull requests/i.test(messageOf(error));
        return {
          wait: {
            person: true,
            line: setting
              ? `GitHub refuses the PR from ${head} into ${base}: the orchestrator acts as GITHUB_TOKEN, and the repository does not let it open PRs: turn on Settings, Actions, General, "Allow GitHub Actions to create and approve pull requests" (the run goes on by itself)`
              : `GitHub refuses the PR from ${head} into ${base}: ${oneLine(messageOf(error))}`,
          },
        };
      }
      if (statusOf(error) !== 422) throw error;
      // A retried create (or an earlier attempt's PR): the open PR of this branch is the one; a
      // merged one means the merge happened and its answer was lost (a crash between the two).
      const found = await this.openPrOf(head, base);
      if (found) return found;
      if (/no commits between/i.test(validationDetails(error))) return "empty";
      return { reason: `could not open a PR from ${head} into ${base}: ${messageOf(error)}` };
    }
  }

  /** The open PR of a branch, or the merged one (its merge's answer was lost), if there is one. */
  private async openPrOf(head: string, base: string): Promise<PullRequest | null> {
    const { data } = await this.ctx.octokit.rest.pulls.list({
      ...this.repo,
      head: `${this.ctx.owner}:${head}`,
      base,
      state: "all",
    });
    const found = data.find((p) => p.state === "open") ?? data.find((p) => p.merged_at !== null);
    return found ? { number: found.number, url: found.html_url } : null;
  }

  /** Why the target is no longer the commit a branch was verified with, or null. */
  private async targetMoved(target: string, base: string): Promise<string | null> {
    const { data } = await this.ctx.octokit.rest.git.getRef({ ...this.repo, ref: `heads/${target}` });
    return data.object.sha === base ? null : `${target} moved since it was verified`;
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

  /**
   * Without a hosted app, a task job pushes with its own GITHUB_TOKEN, and GitHub starts no workflow
   * for that push: the task PR that a retried attempt updated would keep the checks of the commit
   * before it. Acting as a registered app, the orchestrator moves the branch itself, to a commit with
   * the same tree on top of the job's, so that the repository's CI runs on the work about to merge.
   * Once per attempt: when the head is no longer the job's own commit, there is nothing to do.
   */
  private async startChecksOfRetry(
    run: HostedRun,
    id: string,
    pr: PullRequest,
    branch: string,
  ): Promise<void> {
    if (this.ctx.config.workflow?.token !== "app") return;
    const t = run.tasks[id];
    const pushed = t?.attempts[t.attempt - 1]?.pushedSha;
    if (!t || t.attempt < 2 || !pushed) return;
    const { data } = await this.ctx.octokit.rest.pulls.get({ ...this.repo, pull_number: pr.number });
    if (data.head.sha !== pushed || data.state !== "open") return;
    const { data: commit } = await this.ctx.octokit.rest.git.getCommit({ ...this.repo, commit_sha: pushed });
    const { data: touch } = await this.ctx.octokit.rest.git.createCommit({
      ...this.repo,
      message: `Run the checks on attempt ${t.attempt} of ${id}\n\nIts job pushed with the workflow's token, for which GitHub starts no workflow.`,
      tree: commit.tree.sha,
      parents: [pushed],
    });
    await this.ctx.octokit.rest.git.updateRef({
      ...this.repo,
      ref: `heads/${branch}`,
      sha: touch.sha,
      force: false,
    });
    this.ctx.log(
      `${branch}: moved to ${touch.sha.slice(0, 7)} as the app, so that CI runs on attempt ${t.attempt}`,
    );
  }
}
