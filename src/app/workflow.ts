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
import { retry } from "@octokit/plugin-retry";
import { throttling } from "@octokit/plugin-throttling";
import { Octokit } from "@octokit/rest";
import { StateConflictError } from "../engine/store.ts";
import { configFromEnv, type GitHubClient, messageOf, type RepoContext } from "../github/client.ts";
import { gitHubLimits, type OctokitOptions, withRetryPolicy } from "../github/client-policy.ts";
import { writePacing } from "../github/write-pacing.ts";
import { type Repository, repoContextOf } from "./context.ts";
import { handlerOf } from "./events.ts";
import { sweepRepository } from "./waiting.ts";

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

/** Runs the handler, again when a concurrent run wrote the run state first. */
async function withRetries(work: () => Promise<void>): Promise<void> {
  for (let i = 1; ; i++) {
    try {
      return await work();
    } catch (error) {
      if (!(error instanceof StateConflictError) || i >= TRIES) throw error;
    }
  }
}

export async function orchestrate(env: NodeJS.ProcessEnv = process.env): Promise<{ failed: string[] }> {
  const token = core.getInput("token") || env.GITHUB_TOKEN;
  if (!token)
    throw new OrchestratorError(
      "no token: pass `token: ${{ github.token }}` (or an app's token) to the Action",
    );
  core.setSecret(token);
  const appSlug = core.getInput("app-slug");
  const { name, payload } = eventOf(env);
  const octokit = new WorkflowOctokit({
    auth: token,
    baseUrl: env.GITHUB_API_URL || "https://api.github.com",
    request: { fetch: globalThis.fetch },
    // Answers such as "this PR exists" are facts the handlers read: requests are logged only in debug.
    log: { debug: core.debug, info: core.debug, warn: core.warning, error: core.debug },
    ...pacing(env),
  }) as unknown as GitHubClient;
  const [owner, repo] = (env.GITHUB_REPOSITORY ?? "").split("/") as [string, string];
  // Scheduled and dispatched runs may carry no repository: it is asked for.
  const repository =
    (payload.repository as Repository | undefined) ?? (await octokit.rest.repos.get({ owner, repo })).data;
  const config = {
    ...configFromEnv(env),
    ...(core.getInput("task-workflow") ? { taskWorkflow: core.getInput("task-workflow") } : {}),
    workflow: { token: appSlug ? ("app" as const) : ("github_token" as const) },
  };
  const ctx: RepoContext = repoContextOf(octokit, repository, config, (message) => core.info(message));
  const ownLogin = async () => (appSlug ? `${appSlug}[bot]` : ACTIONS_BOT);
  const failed: string[] = [];
  const handler = handlerOf(name, payload);
  if (handler) {
    core.info(`${name}${typeof payload.action === "string" ? `.${payload.action}` : ""}: handling`);
    await withRetries(() => handler(ctx, payload as never, ownLogin)).catch(async (error: unknown) => {
      if (error instanceof RunStateDamageError) await sayStateDamage(ctx, error);
      else failed.push(`${name}: ${messageOf(error)}`);
    });
  }
  // Whatever this run's event, and whatever events of cancelled runs said, the state says the rest.
  // The status comment is edited when due (a scheduled run refreshes it).
  if (reconciles(name, payload))
    await withRetries(() =>
      sweepRepository(ctx, { refreshStatus: name === "schedule", thorough: name === "schedule" }),
    ).catch((error: unknown) => {
      failed.push(`reconciling: ${messageOf(error)}`);
    });
  return { failed };
}
