/**
 * What the Action's jobs share: requests to the app (tried again while it restarts), the run as it
 * was stored at the dispatched version, git over HTTPS with the attempt's token, and the agent's
 * environment without the job's own credentials. Secrets are masked the moment they exist.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as core from "@actions/core";
import { type CheckoutGit, git, inCheckout } from "../attempt/git.ts";
import type { AttemptResult } from "../attempt/attempt.ts";
import { dollarsText, type Micros, usd } from "../graph/amount.ts";
import type { Graph } from "../graph/model.ts";
import { REPORT_MAC_FILE, REPORT_SECRET_VARIABLE, reportMac } from "../protocol/report-key.ts";
import { type AttemptRequest, REPORT_FILE, REPORT_KEY_HEADER, toReport } from "../protocol/report.ts";
import type { Octokit } from "@octokit/rest";
import { runFolder, type StoredRun } from "../protocol/stored-run.ts";
import { reportHolding } from "./report-hold.ts";
import {
  HOSTED_PER_TASK,
  partsOfRunFiles,
  RUN_FILES,
  type RunFiles,
  stateOfParts,
  wholeRunFiles,
} from "../protocol/state-layout.ts";

export class JobError extends Error {
  override name = "JobError";
}

/** Calls `call` until it succeeds, `tries` times at most, pausing longer each time. */
async function retried<T>(
  call: () => Promise<T>,
  retryable: (status: number | undefined) => boolean,
  tries: number,
  pauseMs: number,
): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await call();
    } catch (error) {
      if (i >= tries || !retryable((error as { status?: number }).status)) throw error;
      await new Promise((done) => setTimeout(done, pauseMs * i * i));
    }
  }
}

/**
 * A request to the app. It may be restarting, or behind a load balancer switching replicas: network
 * errors (no status) and 5xx answers are tried again (a report is applied once however often it
 * arrives).
 */
export function postJson(
  url: string,
  body: object,
  bearer: string,
  headers: Record<string, string> = {},
): Promise<Record<string, unknown>> {
  const post = async () => {
    const response = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${bearer}`, ...headers },
      body: JSON.stringify(body),
    }).catch((error: unknown) => {
      throw new JobError(`${url} could not be reached: ${(error as Error).message}`);
    });
    const answer = (await response.json().catch(() => ({}))) as Record<string, unknown>;
    if (response.ok) return answer;
    const reason = String(answer.error ?? response.statusText);
    throw Object.assign(new JobError(`${url} answered ${response.status}: ${reason}`), {
      status: response.status,
    });
  };
  return retried(post, (status) => status === undefined || status >= 500, 3, 1000);
}

/** GitHub answers 5xx and 429 now and then: a read is tried again. */
const githubRetryable = (status: number | undefined) =>
  status !== undefined && (status >= 500 || status === 429);

/** The header that carries the report key, when the app gave one. */
export const reportKeyHeader = (key: string | null): Record<string, string> =>
  key ? { [REPORT_KEY_HEADER]: key } : {};

/** The credential the workflow resolved from the secret the graph names, as Claude Code's variable. */
export function anthropicEnv(env: NodeJS.ProcessEnv, credentialName: string | null): Record<string, string> {
  const value = env.AGENTRELAY_ANTHROPIC_CREDENTIAL?.trim();
  if (!value) {
    throw new JobError(
      credentialName
        ? `no Anthropic credential: the graph's anthropic_credential names the secret '${credentialName}', which is missing or empty in this repository or organisation`
        : "no Anthropic credential: add a repository or organisation secret ANTHROPIC_API_KEY (an API key) or CLAUDE_CODE_OAUTH_TOKEN (from `claude setup-token`)",
    );
  }
  core.setSecret(value);
  return value.startsWith("sk-ant-oat") ? { CLAUDE_CODE_OAUTH_TOKEN: value } : { ANTHROPIC_API_KEY: value };
}

/** What a person does when the model API refuses the job's credential. */
export const ACTION_FIX_CREDENTIAL =
  "replace the repository or organisation secret the graph names with a credential the API accepts";

/** Git over HTTPS with the attempt's token, given through the environment (never on a command line). */
export function gitAuth(token: string): NodeJS.ProcessEnv {
  const basic = Buffer.from(`x-access-token:${token}`).toString("base64");
  core.setSecret(basic);
  return {
    GIT_CONFIG_COUNT: "1",
    GIT_CONFIG_KEY_0: "http.extraheader",
    GIT_CONFIG_VALUE_0: `AUTHORIZATION: basic ${basic}`,
    GIT_TERMINAL_PROMPT: "0",
  };
}

/** The job's environment without what would let the agent act as the job (tokens, the OIDC endpoint). */
export function agentEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  // Also the runner's command files: an agent that wrote to GITHUB_ENV could set NODE_OPTIONS for the
  // steps after it.
  const hidden =
    /^(ACTIONS_ID_TOKEN_REQUEST_|ACTIONS_RUNTIME_|ACTIONS_CACHE_|ACTIONS_RESULTS_|GITHUB_TOKEN$|GH_TOKEN$|AGENTRELAY_ANTHROPIC_CREDENTIAL$|AGENTRELAY_REPORT_SECRET$|INPUT_|GITHUB_ENV$|GITHUB_PATH$|GITHUB_OUTPUT$|GITHUB_STATE$|GITHUB_STEP_SUMMARY$)/;
  return Object.fromEntries(Object.entries(env).filter(([name]) => !hidden.test(name)));
}

/**
 * The run as it was stored at the dispatched version (a commit of the state branch): its parts in
 * the layout of protocol/state-layout.ts, or the one document of a run started before that layout.
 */
export async function storedRun(
  octokit: Octokit,
  owner: string,
  repo: string,
  run: string,
  version: string,
): Promise<StoredRun> {
  const { dir, legacy } = runFolder(run);
  const query = `query($owner: String!, $name: String!, $oid: GitObjectID!, $dir: String!, $legacy: String!) {
    repository(owner: $owner, name: $name) { object(oid: $oid) { ... on Commit { ${RUN_FILES} } } }
  }`;
  const data = await retried(
    () =>
      octokit.graphql<{ repository: { object: RunFiles | null } }>(query, {
        owner,
        name: repo,
        oid: version,
        dir,
        legacy,
      }),
    githubRetryable,
    3,
    500,
  );
  // GitHub cuts texts over 512,000 bytes in GraphQL: those are read whole by the git blobs API.
  const blobText = async (oid: string) => {
    const { data: blob } = await octokit.rest.git.getBlob({ owner, repo, file_sha: oid });
    return Buffer.from(blob.content, "base64").toString("utf8");
  };
  const files = data.repository.object ? await wholeRunFiles(data.repository.object, blobText) : null;
  const parts = files ? partsOfRunFiles(files) : null;
  if (!parts) throw new JobError(`run ${run} has no state at ${version}`);
  return stateOfParts<StoredRun>(parts, HOSTED_PER_TASK);
}

export interface Inputs {
  run: string;
  task: string;
  attempt: number;
  stateVersion: string;
  /** `OWNER/NAME` of the repository the run lives in, when it is not the job's own (empty: the job's). */
  runRepository: string;
  /**
   * Workflow-only mode: what reads the run in `runRepository` (the job's GITHUB_TOKEN reaches its own
   * repository only): a read-only installation token of the registered app, minted by the workflow.
   */
  runToken: string;
  /** The app's address; empty in workflow-only mode, where the job acts with `token`. */
  appUrl: string;
  /** Workflow-only mode: the job's token (its tier's GITHUB_TOKEN) and the tier it was dispatched with. */
  token: string;
  tier: string;
  claudePath: string;
  maxTurns: number;
  timeoutMs: number;
  gateTimeoutMs: number;
}

export function readInputs(): Inputs {
  const required = (name: string) => core.getInput(name, { required: true });
  const attempt = Number(required("attempt"));
  if (!Number.isInteger(attempt) || attempt < 1)
    throw new JobError(`input 'attempt' must be a positive integer`);
  const number = (name: string, fallback: number) => Number(core.getInput(name) || fallback);
  const appUrl = core.getInput("app-url").replace(/\/$/, "");
  const token = core.getInput("token");
  if (token) core.setSecret(token);
  const runToken = appUrl ? "" : core.getInput("run-token");
  if (runToken) core.setSecret(runToken);
  if (!appUrl && !token)
    throw new JobError(
      "set the input 'app-url' (the agentrelay app's address) or, without an app, 'token' and 'tier' (agentrelay init writes them)",
    );
  return {
    run: required("run"),
    task: required("task"),
    attempt,
    stateVersion: required("state-version"),
    runRepository: runRepositoryInput(core.getInput("run-repository")),
    runToken,
    appUrl,
    token: appUrl ? "" : token,
    tier: appUrl ? "" : required("tier"),
    claudePath: core.getInput("claude-path") || "claude",
    maxTurns: number("max-turns", 60),
    timeoutMs: number("timeout-minutes", 100) * 60_000,
    gateTimeoutMs: number("gate-timeout-seconds", 600) * 1000,
  };
}

/** The `run-repository` input, checked: `OWNER/NAME` or empty (it becomes an API path, never a shell word). */
function runRepositoryInput(value: string): string {
  if (value && !/^[A-Za-z0-9][A-Za-z0-9-]{0,38}\/[A-Za-z0-9._-]{1,100}$/.test(value))
    throw new JobError(`input 'run-repository' must be OWNER/NAME (it is '${value.slice(0, 200)}')`);
  return value;
}

export interface JobOutcome {
  result: AttemptResult;
  pushed: boolean;
}

/** A job once it holds its token and its run: what both kinds of attempt (task, resolution) start from. */
export interface Job {
  env: NodeJS.ProcessEnv;
  inputs: Inputs;
  attemptRequest: AttemptRequest;
  state: StoredRun;
  graph: Graph;
  repoDir: string;
  workDir: string;
  /** Git in the checkout through the runner's own git directory (see runnerCheckout). */
  checkout: CheckoutGit;
  /**
   * The attempt's report key, handed out with its first token: kept in this process's memory only
   * (never in the environment, a file or a child's arguments), it proves the push-token request and
   * the report come from the runner.
   */
  reportKey: string | null;
  /** Git's environment for the remote (the attempt's token, never on a command line). */
  auth: NodeJS.ProcessEnv;
  /** The job's own repository on the server (where it fetches and pushes). */
  url: string;
  /** The job's repository's default branch: agent configuration and the workflow come from it. */
  defaultBranch: string;
  mask: (text: string) => string;
  credentialEnv: Record<string, string>;
  started: number;
}

/**
 * The job's checkout (`repoDir`, where the agent works) with the runner's own git directory beside
 * it, outside the checkout and the agent's work directory: everything the runner does with git, from
 * the first fetch to the push, goes through it, and it is sealed before the agent starts (git.ts).
 */
export function runnerCheckout(repoDir: string, env: NodeJS.ProcessEnv): CheckoutGit {
  return inCheckout({
    workTree: repoDir,
    gitDir: mkdtempSync(join(env.RUNNER_TEMP || tmpdir(), "agentrelay-git-")),
  });
}

/** The runner's git directory, empty but for `origin` (the job's repository) and these branches as `origin/<name>`. */
export async function fetchBranches(
  checkout: CheckoutGit,
  url: string,
  branches: string[],
  auth: NodeJS.ProcessEnv,
): Promise<void> {
  await git(checkout.workTree, ["init", "-q", "--bare", checkout.gitDir]);
  await checkout.git(["config", "core.bare", "false"]);
  await checkout.git(["remote", "add", "origin", url]);
  const refspecs = [...new Set(branches)].map((b) => `+refs/heads/${b}:refs/remotes/origin/${b}`);
  await checkout.git(["fetch", "-q", "--no-tags", "origin", ...refspecs], undefined, auth);
}

/**
 * A repository of the agent's own in the checkout, on `branch` at the runner's HEAD, its objects
 * borrowed from the runner's (read-only to the agent once sealed): the agent may use git as it likes
 * there, and nothing it does to it reaches the runner, who commits the checkout's files as data.
 */
export async function giveAgentRepository(checkout: CheckoutGit, branch: string): Promise<void> {
  const dir = checkout.workTree;
  const head = await checkout.git(["rev-parse", "HEAD"]);
  await git(dir, ["init", "-q"]);
  writeFileSync(join(dir, ".git", "objects", "info", "alternates"), `${join(checkout.gitDir, "objects")}\n`);
  await git(dir, ["update-ref", `refs/heads/${branch}`, head]);
  await git(dir, ["symbolic-ref", "HEAD", `refs/heads/${branch}`]);
  await git(dir, ["read-tree", "HEAD"]);
}

/**
 * Reports the result: to the app through the OIDC channel (whatever the token tier), or without an
 * app as a file the workflow's next step uploads as the run's artifact (output `report`: a fresh
 * directory, written once the agent has ended); then the summary and outputs.
 */
export async function finishJob(
  job: Job,
  result: AttemptResult,
  pushed: boolean,
  capMicros: Micros | null,
): Promise<JobOutcome> {
  const { env, inputs } = job;
  const report = toReport(job.attemptRequest, { ...result, commit: pushed ? result.commit : null });
  if (inputs.appUrl) {
    const appUrl = inputs.appUrl;
    await reportHolding(
      async (hold) =>
        postJson(
          `${appUrl}/agentrelay/report`,
          report,
          await core.getIDToken(env.AGENTRELAY_OIDC_AUDIENCE || "agentrelay"),
          { ...reportKeyHeader(job.reportKey), ...hold },
        ),
      job.started,
      (line) => core.info(line),
    );
  } else {
    // The report and its HMAC (protocol/report-key.ts), in a directory of the runner's own: the
    // workflow's next step uploads the directory as the run's report artifact.
    const dir = mkdtempSync(join(env.RUNNER_TEMP || tmpdir(), "agentrelay-report-"));
    const bytes = JSON.stringify(report);
    writeFileSync(join(dir, REPORT_FILE), bytes, { flag: "wx" });
    const secret = env[REPORT_SECRET_VARIABLE]?.trim();
    if (secret) {
      const mac = reportMac(secret, job.attemptRequest, env.GITHUB_RUN_ID ?? "", bytes);
      writeFileSync(join(dir, REPORT_MAC_FILE), mac, { flag: "wx" });
    }
    core.setOutput("report", dir);
  }
  await writeSummary(job.checkout, inputs, result, pushed, Date.now() - job.started, capMicros);
  core.setOutput("outcome", result.outcome);
  core.setOutput("cost-usd", dollarsText(result.costMicros));
  core.setOutput("turns", String(result.turns));
  core.setOutput("commit", pushed ? result.commit : "");
  core.setOutput("no-pr", String(result.noPr));
  return { result, pushed };
}

async function writeSummary(
  checkout: CheckoutGit,
  inputs: Inputs,
  result: AttemptResult,
  pushed: boolean,
  ms: number,
  /** What the attempt was allowed to spend, when a budget applied. */
  capMicros: Micros | null,
): Promise<void> {
  const stat =
    pushed && result.commit
      ? (await checkout.raw(["diff", "--stat", `${result.commit}~1`, result.commit])).stdout.trim()
      : "";
  const gates = result.gates.map((g) => `${g.n}: ${g.passed ? "passed" : "failed"}`).join(", ") || "none";
  core.summary.addHeading(`agentrelay: ${inputs.task}, attempt ${inputs.attempt}`, 3).addTable([
    [
      { data: "Result", header: true },
      {
        data:
          result.outcome + (result.reason ? `: ${result.reason}` : "") + (result.noPr ? " (no changes)" : ""),
      },
    ],
    [
      { data: "Cost", header: true },
      { data: `${usd(result.costMicros)}${capMicros != null ? ` of its cap ${usd(capMicros)}` : ""}` },
    ],
    [{ data: "Turns", header: true }, { data: String(result.turns) }],
    [{ data: "Gate runs", header: true }, { data: gates }],
    [{ data: "Duration", header: true }, { data: `${Math.round(ms / 1000)} s` }],
  ]);
  if (result.gateOutput) core.summary.addHeading("Gate output (end)", 4).addCodeBlock(result.gateOutput);
  if (result.concerns.length) core.summary.addHeading("Concerns", 4).addList(result.concerns);
  if (result.opsConcerns.length) core.summary.addHeading("Ops concerns", 4).addList(result.opsConcerns);
  if (stat) core.summary.addHeading("Changes", 4).addCodeBlock(stat);
  await core.summary.write();
}
