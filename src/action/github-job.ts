/**
 * The task Action's job, step by step: identify the attempt from the inputs, trade the job's OIDC
 * token for the attempt's scoped token at the app, read the task and the run state pinned by the
 * dispatched version, check out the task branch, restore agent configuration from the default
 * branch, run the attempt (Claude Code, in-job commands, gate, review), push the task branch, report
 * to the app, and write the job summary and outputs. Secrets are masked the moment they exist.
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import * as core from "@actions/core";
import { Octokit } from "@octokit/rest";
import { integrationBranch, taskBranch } from "../graph/model.ts";
import { parseRunGraph } from "../protocol/run-source.ts";
import { toReport } from "../protocol/report.ts";
import { runFolder, type StoredRun } from "../protocol/stored-run.ts";
import {
  HOSTED_PER_TASK,
  partsOfRunFiles,
  RUN_FILES,
  type RunFiles,
  stateOfParts,
} from "../protocol/state-layout.ts";
import { git, gitRaw } from "../attempt/git.ts";
import { handoff } from "../attempt/handoff.ts";
import { redactor } from "../attempt/redact.ts";
import {
  type AttemptResult,
  DEFAULT_ALLOWED_TOOLS,
  failedAttempt,
  runAttempt,
} from "../attempt/run-attempt.ts";

/** Agent configuration an earlier task must not be able to plant for a later one. */
export const AGENT_CONFIG_PATHS = [".claude", "CLAUDE.md", ".mcp.json"];

export class JobError extends Error {
  override name = "JobError";
}

interface Inputs {
  run: string;
  task: string;
  attempt: number;
  stateVersion: string;
  appUrl: string;
  claudePath: string;
  maxTurns: number;
  timeoutMs: number;
  gateTimeoutMs: number;
}

function readInputs(): Inputs {
  const required = (name: string) => core.getInput(name, { required: true });
  const attempt = Number(required("attempt"));
  if (!Number.isInteger(attempt) || attempt < 1)
    throw new JobError(`input 'attempt' must be a positive integer`);
  const number = (name: string, fallback: number) => Number(core.getInput(name) || fallback);
  return {
    run: required("run"),
    task: required("task"),
    attempt,
    stateVersion: required("state-version"),
    appUrl: required("app-url").replace(/\/$/, ""),
    claudePath: core.getInput("claude-path") || "claude",
    maxTurns: number("max-turns", 60),
    timeoutMs: number("timeout-minutes", 100) * 60_000,
    gateTimeoutMs: number("gate-timeout-seconds", 600) * 1000,
  };
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
function postJson(url: string, body: object, bearer: string): Promise<Record<string, unknown>> {
  const post = async () => {
    const response = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${bearer}` },
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

/** The credential the workflow resolved from the secret the graph names, as Claude Code's variable. */
function anthropicEnv(env: NodeJS.ProcessEnv, credentialName: string | null): Record<string, string> {
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

/** Git over HTTPS with the attempt's token, given through the environment (never on a command line). */
function gitAuth(token: string): NodeJS.ProcessEnv {
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
    /^(ACTIONS_ID_TOKEN_REQUEST_|ACTIONS_RUNTIME_|ACTIONS_CACHE_|ACTIONS_RESULTS_|GITHUB_TOKEN$|GH_TOKEN$|AGENTRELAY_ANTHROPIC_CREDENTIAL$|INPUT_|GITHUB_ENV$|GITHUB_PATH$|GITHUB_OUTPUT$|GITHUB_STATE$|GITHUB_STEP_SUMMARY$)/;
  return Object.fromEntries(Object.entries(env).filter(([name]) => !hidden.test(name)));
}

export interface JobOutcome {
  result: AttemptResult;
  pushed: boolean;
}

export async function runTaskJob(env: NodeJS.ProcessEnv = process.env): Promise<JobOutcome> {
  if (env.GITHUB_EVENT_NAME !== "workflow_dispatch") {
    throw new JobError(
      `this Action runs only in jobs started by workflow_dispatch (this job: ${env.GITHUB_EVENT_NAME ?? "unknown"})`,
    );
  }
  const inputs = readInputs();
  const [owner, repo] = (env.GITHUB_REPOSITORY ?? "").split("/") as [string, string];
  const started = Date.now();

  // 1. The attempt's token, for the OIDC token that proves which job this is.
  const oidc = await core.getIDToken(env.AGENTRELAY_OIDC_AUDIENCE || "agentrelay");
  const attemptRequest = { run: inputs.run, task: inputs.task, attempt: inputs.attempt };
  const grant = await postJson(`${inputs.appUrl}/agentrelay/token`, attemptRequest, oidc);
  const token = String(grant.token);
  core.setSecret(token);
  core.info(
    `attempt ${inputs.attempt} of ${inputs.task} (${inputs.run}): ${String(grant.tier)} token until ${String(grant.expires_at)}`,
  );

  // 2. The task and the run, as they were when the attempt was dispatched.
  const octokit = new Octokit({
    auth: token,
    baseUrl: env.GITHUB_API_URL || "https://api.github.com",
    request: { fetch: globalThis.fetch },
  });
  const state = await storedRun(octokit, owner, repo, inputs.run, inputs.stateVersion);
  const graph = parseRunGraph(state.source);
  const task = graph.tasks.find((t) => t.id === inputs.task);
  if (!task) throw new JobError(`run ${inputs.run} has no task '${inputs.task}'`);
  const credentialEnv = anthropicEnv(env, graph.settings.anthropicCredential);

  // 3. The checkout: the task branch, new from the integration branch or as the last attempt left it.
  const workspace = env.GITHUB_WORKSPACE || process.cwd();
  const repoDir = join(workspace, "repo");
  const workDir = join(env.RUNNER_TEMP || workspace, "agentrelay", inputs.task, String(inputs.attempt));
  mkdirSync(repoDir, { recursive: true });
  mkdirSync(workDir, { recursive: true });
  core.setOutput("work-dir", workDir);
  const auth = gitAuth(token);
  const branch = taskBranch(graph.name, task.id);
  const integration = integrationBranch(graph.name, task.workstreamId);
  const defaultBranch = state.source.branch;
  const url = `${env.GITHUB_SERVER_URL || "https://github.com"}/${owner}/${repo}.git`;
  core.startGroup("Check out the task branch");
  await git(repoDir, ["init", "-q"]);
  await git(repoDir, ["remote", "add", "origin", url]);
  await git(
    repoDir,
    [
      "fetch",
      "-q",
      "--no-tags",
      "origin",
      `+refs/heads/${integration}:refs/remotes/origin/${integration}`,
      `+refs/heads/${defaultBranch}:refs/remotes/origin/${defaultBranch}`,
    ],
    undefined,
    auth,
  );
  const existing =
    (
      await gitRaw(
        repoDir,
        ["fetch", "-q", "--no-tags", "origin", `+refs/heads/${branch}:refs/remotes/origin/${branch}`],
        undefined,
        auth,
      )
    ).code === 0;
  const fresh = inputs.attempt === 1 || !existing;
  await git(repoDir, ["checkout", "-q", "-B", branch, fresh ? `origin/${integration}` : `origin/${branch}`]);
  core.info(fresh ? `${branch} starts from ${integration}` : `${branch} continues from the previous attempt`);
  // Agent configuration comes from the default branch, whatever the task branch holds.
  for (const path of AGENT_CONFIG_PATHS) {
    await gitRaw(repoDir, ["rm", "-r", "-q", "--ignore-unmatch", "--", path]);
    const onDefault = await git(repoDir, ["ls-tree", "--name-only", `origin/${defaultBranch}`, "--", path]);
    if (onDefault) await git(repoDir, ["checkout", `origin/${defaultBranch}`, "--", path]);
  }
  core.endGroup();

  // 4-8. The attempt itself (protocol files, Claude Code, in-job commands, gate, review, commit).
  const { inputFiles, peers } = handoff(state, task);
  const mask = redactor([token, oidc, ...Object.values(credentialEnv)]);
  let result: AttemptResult;
  core.startGroup(`Claude Code: ${task.id}`);
  try {
    result = await runAttempt({
      graph,
      task,
      graphText: state.source.text,
      attempt: inputs.attempt,
      repoDir,
      baseRef: `origin/${integration}`,
      workDir,
      inputFiles,
      peers,
      ...(state.source.params ? { params: state.source.params } : {}),
      capUsd: state.tasks[task.id]?.attempts[inputs.attempt - 1]?.capUsd ?? null,
      claude: {
        bin: inputs.claudePath,
        env: { ...agentEnv(env), ...credentialEnv, DISABLE_AUTOUPDATER: "1" },
        maxTurns: inputs.maxTurns,
        timeoutMs: inputs.timeoutMs,
        allowedTools: DEFAULT_ALLOWED_TOOLS,
      },
      gateTimeoutMs: inputs.gateTimeoutMs,
      signalEntry: env.AGENTRELAY_ENTRY || process.argv[1]!,
      log: (line) => core.info(mask(line)),
    });
  } catch (error) {
    result = failedAttempt(`the runner failed: ${mask((error as Error).message)}`);
  }
  core.endGroup();

  // Push the task branch (never any other), also after a failure: the next attempt continues from it.
  let pushed = false;
  const tier = task.primaryAgent.isolation.tokenTier;
  if (result.commit && tier !== "read_only") {
    const push = await gitRaw(
      repoDir,
      ["push", "-q", ...(fresh ? ["--force"] : []), "origin", `HEAD:refs/heads/${branch}`],
      undefined,
      auth,
    );
    if (push.code !== 0) {
      result = {
        ...failedAttempt(`pushing ${branch} failed: ${mask(push.stderr.trim())}`),
        costUsd: result.costUsd,
        turns: result.turns,
        gates: result.gates,
      };
    } else pushed = true;
  } else if (result.commit && result.outcome === "succeeded") {
    result = {
      ...result,
      noPr: true,
      opsConcerns: [...result.opsConcerns, "read_only task: its commits were not pushed"],
    };
  }

  // Report through the OIDC channel, which does not depend on the task's token tier.
  const report = toReport(attemptRequest, { ...result, commit: pushed ? result.commit : null });
  await postJson(
    `${inputs.appUrl}/agentrelay/report`,
    report,
    await core.getIDToken(env.AGENTRELAY_OIDC_AUDIENCE || "agentrelay"),
  );

  const capUsd = state.tasks[task.id]?.attempts[inputs.attempt - 1]?.capUsd ?? null;
  await writeSummary(repoDir, inputs, result, pushed, Date.now() - started, capUsd);
  core.setOutput("outcome", result.outcome);
  core.setOutput("cost-usd", result.costUsd.toFixed(4));
  core.setOutput("turns", String(result.turns));
  core.setOutput("commit", pushed ? result.commit : "");
  core.setOutput("no-pr", String(result.noPr));
  return { result, pushed };
}

async function writeSummary(
  repoDir: string,
  inputs: Inputs,
  result: AttemptResult,
  pushed: boolean,
  ms: number,
  /** What the attempt was allowed to spend, when a budget applied. */
  capUsd: number | null,
): Promise<void> {
  const stat = pushed ? (await gitRaw(repoDir, ["diff", "--stat", "HEAD~1", "HEAD"])).stdout.trim() : "";
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
      { data: `$${result.costUsd.toFixed(4)}${capUsd != null ? ` of its cap $${capUsd.toFixed(4)}` : ""}` },
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

/**
 * The run as it was stored at the dispatched version (a commit of the state branch): its parts in
 * the layout of protocol/state-layout.ts, or the one document of a run started before that layout.
 */
async function storedRun(
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
  const parts = data.repository.object ? partsOfRunFiles(data.repository.object) : null;
  if (!parts) throw new JobError(`run ${run} has no state at ${version}`);
  return stateOfParts<StoredRun>(parts, HOSTED_PER_TASK);
}
