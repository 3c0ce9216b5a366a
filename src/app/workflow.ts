/**
 * The orchestrator as a workflow, with nothing to host: `.github/workflows/agentrelay.yml` runs this
 * once per event, in a fresh process, with the event's JSON at GITHUB_EVENT_PATH (as Actions gives
 * it). The event goes to the handler the app would give it (events.ts); then every run of the
 * repository is reconciled from its state. GitHub keeps one pending run per concurrency group and
 * cancels the others, so what a cancelled run would have done is done by the next one.
 *
 * It acts as the token it is given: a registered app's installation token (the workflow mints it
 * with the app's id and private key), or the workflow's GITHUB_TOKEN, whose PRs start no workflow.
 */
import { RunStateDamageError, sayStateDamage } from "../github/damage.ts";
import { readFileSync } from "node:fs";
import * as core from "@actions/core";
import { REPORT_SECRET_VARIABLE } from "../protocol/report-key.ts";
import { retry } from "@octokit/plugin-retry";
import { throttling } from "@octokit/plugin-throttling";
import { Octokit } from "@octokit/rest";
import { StateConflictError } from "../engine/store.ts";
import { configFromEnv, type GitHubClient, messageOf, type RepoContext, statusOf } from "../github/client.ts";
import { gitHubLimits, type OctokitOptions, withRetryPolicy } from "../github/client-policy.ts";
import { type Clock, REAL_CLOCK, unpaced, WriteBudgetSpent, writePacing } from "../github/write-pacing.ts";
import { type Repository, repoContextOf } from "./context.ts";
import { handlerOf } from "./events.ts";
import { anyActive, reconcileRepository } from "./reconcile.ts";
import { carryOutWaiting } from "./waiting.ts";
import { handOverElsewhere } from "./workflow-elsewhere.ts";

/** The login GitHub shows for what a workflow's GITHUB_TOKEN does. */
export const ACTIONS_BOT = "github-actions[bot]";
/** A run that lost a compare-and-swap to a concurrent run (a command, a push) tries again this often. */
const TRIES = 3;

const WorkflowOctokit = Octokit.plugin(retry, throttling, gitHubLimits, writePacing).defaults(
  (o: OctokitOptions) => withRetryPolicy(o),
);

/**
 * GitHub asks clients to pace their writes (plugin-throttling waits a second between two); a server
 * with no rate limits (a GitHub Enterprise Server that turned them off, the stand-in) may say
 * AGENTRELAY_GITHUB_PACING=off.
 */
const pacing = (env: NodeJS.ProcessEnv): { throttle?: never } =>
  env.AGENTRELAY_GITHUB_PACING === "off" ? { throttle: { enabled: false } as never } : {};

export class OrchestratorError extends Error {
  override name = "OrchestratorError";
}

/** What the run was started for, as the runner gives it. */
function eventOf(env: NodeJS.ProcessEnv): { name: string; payload: Record<string, unknown> } {
  const name = env.GITHUB_EVENT_NAME;
  const path = env.GITHUB_EVENT_PATH;
  if (!name || !path)
    throw new OrchestratorError(
      "GITHUB_EVENT_NAME and GITHUB_EVENT_PATH are not set: run this in a workflow",
    );
  let payload: unknown;
  try {
    payload = JSON.parse(readFileSync(path, "utf8"));
  } catch (error) {
    throw new OrchestratorError(`cannot read the event at ${path}: ${(error as Error).message}`);
  }
  if (payload === null || typeof payload !== "object")
    throw new OrchestratorError(`the event at ${path} is not an object`);
  return { name, payload: payload as Record<string, unknown> };
}

/**
 * Whether the event's run is in the queue GitHub may cancel runs from (the workflow's concurrency
 * group `agentrelay-runs`: a job ended, a PR closed, the schedule, a dispatch by hand). Only those
 * runs reconcile the repository, and one at a time; the others (a command, a pushed graph, finished
 * checks, a plan) are never cancelled and do only what their event says, so that no two reconcilers
 * carry out the same owed effect at once.
 */
export function reconciles(name: string, payload: { action?: unknown }): boolean {
  if (name === "pull_request") return payload.action === "closed";
  return name === "workflow_run" || name === "schedule" || name === "workflow_dispatch";
}

/**
 * The repositories the app's token was minted for (the `repositories` input, the repository variable
 * AGENTRELAY_REPOSITORIES, comma- or newline-separated names as actions/create-github-app-token takes
 * them). A list that leaves out the orchestrator's own repository would mint a token that cannot act
 * here at all: refused in one line before anything is read or written.
 */
export function mintedFor(text: string, own: string): string[] {
  const names = text
    .split(/[\s,]+/)
    .map((n) => n.trim())
    .filter(Boolean);
  const bad = names.find((n) => !/^[A-Za-z0-9._-]{1,100}$/.test(n));
  if (bad !== undefined)
    throw new OrchestratorError(
      `the repository variable AGENTRELAY_REPOSITORIES holds '${bad.slice(0, 100)}': give repository names without their owner, comma-separated (${own},api)`,
    );
  if (names.length > 0 && !names.some((n) => n.toLowerCase() === own.toLowerCase()))
    throw new OrchestratorError(
      `the repository variable AGENTRELAY_REPOSITORIES (${names.join(",")}) leaves out ${own}, so the app's token cannot act here: add it (${[own, ...names].join(",")})`,
    );
  return names;
}

/** Runs the handler, again when a concurrent run wrote the run state first. */
async function withRetries<T>(work: () => Promise<T>): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await work();
    } catch (error) {
      if (!(error instanceof StateConflictError) || i >= TRIES) throw error;
    }
  }
}

/** An input of the Action, as the runner passes it (INPUT_<NAME>), read from `env`. */
const input = (env: NodeJS.ProcessEnv, name: string): string =>
  (env[`INPUT_${name.replace(/ /g, "_").toUpperCase()}`] ?? "").trim();

/** How the orchestrator meets the world: the runner's, unless a harness runs it in its own process. */
export interface OrchestratorHost {
  fetch?: typeof globalThis.fetch;
  /** The clock writes are paced on and the run reads (a simulated one in benches). */
  clock?: Clock;
  log?: (message: string) => void;
  /** The event, instead of GITHUB_EVENT_NAME and the file at GITHUB_EVENT_PATH. */
  event?: { name: string; payload: Record<string, unknown> };
}

export async function orchestrate(
  env: NodeJS.ProcessEnv = process.env,
  host: OrchestratorHost = {},
): Promise<{ failed: string[] }> {
  const token = input(env, "token") || env.GITHUB_TOKEN;
  if (!token)
    throw new OrchestratorError(
      "no token: pass `token: ${{ github.token }}` (or an app's token) to the Action",
    );
  const log = host.log ?? ((message: string) => core.info(message));
  if (!host.log) core.setSecret(token);
  const appSlug = input(env, "app-slug");
  const { name, payload } = host.event ?? eventOf(env);
  const octokit = new WorkflowOctokit({
    auth: token,
    baseUrl: env.GITHUB_API_URL || "https://api.github.com",
    request: { fetch: host.fetch ?? globalThis.fetch },
    // Answers such as "this PR exists" are facts the handlers read: requests are logged only in debug.
    log: host.log
      ? { debug: () => undefined, info: () => undefined, warn: host.log, error: () => undefined }
      : { debug: core.debug, info: core.debug, warn: core.warning, error: core.debug },
    ...(host.clock ? { pacing: { clock: host.clock } } : {}),
    ...pacing(env),
  }) as unknown as GitHubClient;
  const [owner, repo] = (env.GITHUB_REPOSITORY ?? "").split("/") as [string, string];
  // Before anything is asked: a token minted without this repository could not even read it.
  const minted = appSlug ? mintedFor(input(env, "repositories"), repo) : [];
  // Scheduled and dispatched runs may carry no repository: it is asked for.
  const repository =
    (payload.repository as Repository | undefined) ?? (await octokit.rest.repos.get({ owner, repo })).data;
  // What the jobs' reports are bound with (protocol/report-key.ts): the workflow names the secret.
  const reportSecret = env[REPORT_SECRET_VARIABLE]?.trim() || null;
  if (reportSecret) core.setSecret(reportSecret);
  const config = {
    ...configFromEnv(env),
    ...(input(env, "task-workflow") ? { taskWorkflow: input(env, "task-workflow") } : {}),
    workflow: { token: appSlug ? ("app" as const) : ("github_token" as const), reportSecret },
    ...(host.clock ? { now: host.clock.now } : {}),
  };
  const ctx: RepoContext = repoContextOf(octokit, repository, config, log);
  const ownLogin = async () => (appSlug ? `${appSlug}[bot]` : ACTIONS_BOT);
  const failed: string[] = [];
  const handler = handlerOf(name, payload);
  // The event met GitHub's write limit: what it asked for waits for the scheduled run (waiting.ts).
  let waits = false;
  if (handler) {
    log(`${name}${typeof payload.action === "string" ? `.${payload.action}` : ""}: handling`);
    await withRetries(() => handler(ctx, payload as never, ownLogin)).catch(async (error: unknown) => {
      if (error instanceof RunStateDamageError) await sayStateDamage(ctx, error);
      else failed.push(`${name}: ${messageOf(error)}`);
      waits ||= error instanceof WriteBudgetSpent;
    });
  }
  // Whatever this run's event, and whatever events of cancelled runs said, the state says the rest.
  // The status comment is edited when due (a scheduled run refreshes it).
  let active: number | null = name === "push" ? null : 0;
  if (name === "workflow_dispatch")
    await handedOverRunEnded(ctx, payload, host.clock ?? REAL_CLOCK).catch((error: unknown) => {
      failed.push(`the task run that dispatched this one: ${messageOf(error)}`);
    });
  // A task run of a workstream whose graph lives in another repository: handed over to its orchestrator.
  if (name === "workflow_dispatch" || name === "workflow_run")
    await handOverElsewhere(ctx, name, payload, minted).catch((error: unknown) => {
      failed.push(`the run of the task run that ended here: ${messageOf(error)}`);
    });
  if (reconciles(name, payload))
    active = await withRetries(() => reconcileAndCarryOut(ctx, name === "schedule", ownLogin)).catch(
      (error: unknown) => {
        failed.push(`reconciling: ${messageOf(error)}`);
        return null;
      },
    );
  // The schedule runs only while a run is active or work waits: a pushed graph may have started a run
  // (a push only turns it on); a reconciling run knows whether any is left, and whether work waits.
  const scheduled =
    waits || (name === "push" && (await anyActive(ctx)))
      ? true
      : reconciles(name, payload) && active !== null
        ? active > 0
        : null;
  if (scheduled !== null)
    await scheduleWhile(ctx, scheduled, waits).catch((error: unknown) => {
      failed.push(
        waits
          ? `${name} waits for GitHub's limit, and ${SCHEDULE_WORKFLOW}, which would carry it out, could not be enabled (${messageOf(error)}): re-run this workflow run once the limit frees up`
          : `the schedule: ${messageOf(error)}`,
      );
    });
  return { failed };
}

/** How long a task run's hand-over job is waited for: it ends seconds after its dispatch. */
const HAND_OVER_WAIT_MS = 120_000;
const HAND_OVER_POLL_MS = 5_000;

/**
 * A task run hands over from its last job, by dispatching this workflow with its run id (task-run)
 * while it is still in progress: the run is waited for until it completed (its report is read then).
 * A dispatch by hand names no run; an id that is no run of the repository is not waited for.
 */
async function handedOverRunEnded(ctx: RepoContext, payload: Record<string, unknown>, clock: Clock) {
  const input = (payload.inputs as Record<string, unknown> | undefined)?.["task-run"];
  const run_id = Number(input);
  if (typeof input !== "string" || !/^[1-9][0-9]{0,15}$/.test(input)) return;
  const deadline = clock.now() + HAND_OVER_WAIT_MS;
  for (;;) {
    let status: string | null;
    try {
      ({ status } = (
        await ctx.octokit.rest.actions.getWorkflowRun({ owner: ctx.owner, repo: ctx.repo, run_id })
      ).data);
    } catch (error) {
      if (statusOf(error) === 404) return;
      throw error;
    }
    if (status === "completed" || clock.now() >= deadline) return;
    await clock.sleep(HAND_OVER_POLL_MS);
  }
}

/**
 * Every run of the repository reconciled; then the work that waited for GitHub's write limit carried
 * out (waiting.ts), by the scheduled run, and by any run that finds no run active: it would disable
 * the schedule that picks that work up. Answers how many runs are active, a waiting item counted as
 * one (the schedule stays on for it).
 */
async function reconcileAndCarryOut(
  ctx: RepoContext,
  scheduled: boolean,
  ownLogin: () => Promise<string>,
): Promise<number> {
  const reconciled = await reconcileRepository(ctx, { refreshStatus: scheduled, thorough: scheduled });
  if (!scheduled && reconciled.active > 0) return reconciled.active;
  const waiting = await carryOutWaiting(ctx, reconciled.followed, ownLogin);
  // What it carried out may have started a run.
  const active = waiting.carried > 0 ? Number(await anyActive(ctx)) : reconciled.active;
  return active + waiting.left;
}

/** The workflow that reconciles every 15 minutes while a run is active (init --no-app writes it). */
export const SCHEDULE_WORKFLOW = "agentrelay-schedule.yml";

/**
 * Enables the scheduled workflow while a run is active or work waits for GitHub's limit, and disables
 * it once neither is so, so that an idle repository runs no job
 * (https://docs.github.com/en/rest/actions/workflows#disable-a-workflow, which needs `actions: write`;
 * a repository without the file, from before it, is left as it is). `waiting`: work waits for GitHub's
 * limit, so the enabling is asked for even while this run knows the limit spent (GitHub may not count
 * it as content).
 */
async function scheduleWhile(ctx: RepoContext, on: boolean, waiting = false): Promise<void> {
  const repo = { owner: ctx.owner, repo: ctx.repo, workflow_id: SCHEDULE_WORKFLOW };
  let state: string;
  try {
    state = (await ctx.octokit.rest.actions.getWorkflow(repo)).data.state;
  } catch (error) {
    if (statusOf(error) === 404) return;
    throw error;
  }
  if (on === (state === "active")) return;
  if (on) await ctx.octokit.rest.actions.enableWorkflow({ ...repo, ...(waiting ? unpaced : {}) });
  else await ctx.octokit.rest.actions.disableWorkflow(repo);
  ctx.log(
    `${SCHEDULE_WORKFLOW}: ${on ? "enabled while a run is active or work waits" : "disabled: no run is active, no work waits"}`,
  );
}
