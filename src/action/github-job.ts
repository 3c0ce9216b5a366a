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
import { repositoryOfInput, subjectOfInput, tierOfInput } from "../protocol/resolution.ts";
import { buildPlan } from "../plan/plan.ts";
import { handoff } from "../attempt/handoff.ts";
import { redactor } from "../attempt/redact.ts";
import { AgentUnavailableError, checkAgent } from "../attempt/preflight.ts";
import { failedAttempt } from "../attempt/attempt.ts";
import { restoreAgentConfig } from "../attempt/protected-paths.ts";
import {
  ACTION_FIX_CREDENTIAL,
  agentEnv,
  anthropicEnv,
  fetchBranches,
  finishJob,
  gitAuth,
  giveAgentRepository,
  JobError,
  type JobOutcome,
  postJson,
  readInputs,
  runnerCheckout,
  storedRun,
} from "./job-io.ts";
import { attemptInJob } from "./attempt-job.ts";
import { runResolutionJob } from "./resolution-job.ts";
import { askPushToken, tokenForPush } from "./push-token.ts";

export { agentEnv, JobError, type JobOutcome };

export async function runTaskJob(env: NodeJS.ProcessEnv = process.env): Promise<JobOutcome> {
  if (env.GITHUB_EVENT_NAME !== "workflow_dispatch") {
    throw new JobError(
      `this Action runs only in jobs started by workflow_dispatch (this job: ${env.GITHUB_EVENT_NAME ?? "unknown"})`,
    );
  }
  const inputs = readInputs();
  const [owner, repo] = (env.GITHUB_REPOSITORY ?? "").split("/") as [string, string];
  const started = Date.now();
  // A workstream in another repository than the graph's: the job runs here, its run lives there.
  const runRepository =
    inputs.runRepository && inputs.runRepository.toLowerCase() !== `${owner}/${repo}`.toLowerCase()
      ? inputs.runRepository
      : "";

  // 1. The attempt's token: from the app, for the OIDC token that proves which job this is; without an
  // app, the job's own (the task workflow's job of the task's tier).
  const attemptRequest = {
    run: inputs.run,
    task: inputs.task,
    attempt: inputs.attempt,
    ...(runRepository ? { repository: runRepository } : {}),
  };
  let token = inputs.token;
  /** What reads the run where it lives: the app's read-only token for the run's repository, if another. */
  let runToken = inputs.runToken;
  /** When the app's token lapses (a job's own GITHUB_TOKEN lasts as long as the job). */
  let expiresAt = "";
  let reportKey: string | null = null;
  const secrets = [token, runToken].filter(Boolean);
  // Without an app, the job's GITHUB_TOKEN reaches its own repository only ("The token's permissions
  // are limited to the repository that contains your workflow":
  // https://docs.github.com/actions/security-guides/automatic-token-authentication): the run is read
  // with the read-only token the task workflow minted for the run's repository.
  if (runRepository && !inputs.appUrl && !runToken)
    throw new JobError(
      `this job's run lives in ${runRepository}, which the job's GITHUB_TOKEN cannot read: give this repository the registered app's variable AGENTRELAY_APP_CLIENT_ID and secret AGENTRELAY_APP_PRIVATE_KEY, and its task workflow from \`agentrelay init --no-app\` (it mints the token)`,
    );
  if (inputs.appUrl) {
    const oidc = await core.getIDToken(env.AGENTRELAY_OIDC_AUDIENCE || "agentrelay");
    const grant = await postJson(`${inputs.appUrl}/agentrelay/token`, attemptRequest, oidc);
    token = String(grant.token);
    expiresAt = String(grant.expires_at);
    reportKey = typeof grant.report_key === "string" ? grant.report_key : null;
    runToken = typeof grant.run_token === "string" ? grant.run_token : "";
    if (runToken) {
      core.setSecret(runToken);
      secrets.push(runToken);
    }
    core.setSecret(token);
    if (reportKey) core.setSecret(reportKey);
    secrets.push(token, oidc, ...(reportKey ? [reportKey] : []));
    core.info(
      `attempt ${inputs.attempt} of ${inputs.task} (${inputs.run}): ${String(grant.tier)} token until ${String(grant.expires_at)}`,
    );
  }

  // 2. The task and the run, as they were when the attempt was dispatched, read where the run lives.
  const octokit = new Octokit({
    auth: runToken || token,
    baseUrl: env.GITHUB_API_URL || "https://api.github.com",
    request: { fetch: globalThis.fetch },
  });
  const [runOwner, runRepo] = runRepository ? (runRepository.split("/") as [string, string]) : [owner, repo];
  const state = await storedRun(octokit, runOwner, runRepo, inputs.run, inputs.stateVersion);
  const graph = parseRunGraph(state.source);
  const plan = buildPlan(graph);
  const subject = subjectOfInput(plan, inputs.task);
  if (!subject) throw new JobError(`run ${inputs.run} has no task '${inputs.task}'`);
  // Only a job of the task's workstream's repository may take it (the app checks it too): without an
  // app, the orchestrator reads an attempt's report only there, and this one's push would land nowhere.
  const works = repositoryOfInput(plan, inputs.task) ?? `${runOwner}/${runRepo}`;
  if (works.toLowerCase() !== `${owner}/${repo}`.toLowerCase())
    throw new JobError(
      `${inputs.task} of run ${inputs.run} works in ${works}: a job in ${owner}/${repo} may not take it`,
    );
  // Without an app, the tier chose this job and its token: it must be the one the graph gives the task.
  if (inputs.tier && inputs.tier !== tierOfInput(plan, inputs.task))
    throw new JobError(
      `this job runs with the ${inputs.tier} token tier, but ${inputs.task} has ${tierOfInput(plan, inputs.task)}: only the orchestrator should dispatch the task workflow`,
    );
  // Before the agent spends anything: its credential, its executable, the model API. What fails here
  // is reported as an attempt that does not count (the same cause would fail a retry).
  let credentialEnv: Record<string, string> = {};
  let unavailable: string | null = null;
  try {
    credentialEnv = anthropicEnv(env, graph.settings.anthropicCredential);
    await checkAgent({
      bin: inputs.claudePath,
      env: { ...agentEnv(env), ...credentialEnv },
      nameAnother:
        "run the job in the agent image `agentrelay init` names, or set the Action's claude-path input",
      logIn: "give the job the secret the graph names",
      fixCredential: ACTION_FIX_CREDENTIAL,
    });
  } catch (error) {
    if (!(error instanceof JobError || error instanceof AgentUnavailableError)) throw error;
    unavailable = error.message;
  }
  const workspace = env.GITHUB_WORKSPACE || process.cwd();
  const repoDir = join(workspace, "repo");
  const workDir = join(env.RUNNER_TEMP || workspace, "agentrelay", inputs.task, String(inputs.attempt));
  mkdirSync(repoDir, { recursive: true });
  mkdirSync(workDir, { recursive: true });
  core.setOutput("work-dir", workDir);
  const auth = gitAuth(token);
  const url = `${env.GITHUB_SERVER_URL || "https://github.com"}/${owner}/${repo}.git`;
  const mask = redactor([...secrets, ...Object.values(credentialEnv)]);
  const checkout = runnerCheckout(repoDir, env);
  // The run's branch is the graph's repository's; here the workflow was dispatched on this one's default.
  const defaultBranch = runRepository ? env.GITHUB_REF_NAME || "" : state.source.branch;
  if (!defaultBranch)
    throw new JobError("GITHUB_REF_NAME is not set: run the task workflow as the app dispatches it");
  const job = {
    env,
    inputs,
    attemptRequest,
    state,
    graph,
    repoDir,
    workDir,
    checkout,
    reportKey,
    auth,
    url,
    defaultBranch,
    mask,
    credentialEnv,
    started,
  };
  if (unavailable !== null)
    return finishJob(job, { ...failedAttempt(unavailable), agentUnavailable: true }, false, null);
  if ("resolution" in subject) return runResolutionJob(job, subject.resolution);
  const task = graph.tasks.find((t) => t.id === inputs.task)!;

  // 3. The checkout: the task branch, new from the integration branch or as the last attempt left it.
  const branch = taskBranch(graph.name, task.id);
  const integration = integrationBranch(graph.name, task.workstreamId);
  core.startGroup("Check out the task branch");
  await fetchBranches(checkout, url, [integration, defaultBranch], auth);
  const existing =
    (
      await checkout.raw(
        ["fetch", "-q", "--no-tags", "origin", `+refs/heads/${branch}:refs/remotes/origin/${branch}`],
        undefined,
        auth,
      )
    ).code === 0;
  const fresh = inputs.attempt === 1 || !existing;
  await checkout.git(["checkout", "-q", "-B", branch, fresh ? `origin/${integration}` : `origin/${branch}`]);
  core.info(fresh ? `${branch} starts from ${integration}` : `${branch} continues from the previous attempt`);
  // Agent configuration (at any depth) comes from the default branch, whatever the task branch holds.
  await restoreAgentConfig(checkout, `origin/${defaultBranch}`);
  await giveAgentRepository(checkout, branch);
  core.endGroup();

  // 4-8. The attempt itself (protocol files, Claude Code, in-job commands, gate, review, commit).
  const { inputFiles, peers, landings, landedElsewhere } = handoff(state, task, plan);
  let result = await attemptInJob(job, `Claude Code: ${task.id}`, {
    task,
    baseRef: `origin/${integration}`,
    inputFiles,
    peers,
    landings,
    landedElsewhere,
    capMicros: state.tasks[task.id]?.attempts[inputs.attempt - 1]?.capMicros ?? null,
  });

  // Push the task branch (never any other), also after a failure: the next attempt continues from it.
  let pushed = false;
  const tier = task.primaryAgent.isolation.tokenTier;
  if (result.commit && tier !== "read_only") {
    // The first token may have lapsed while the agent worked: the push asks for its own then.
    const audience = env.AGENTRELAY_OIDC_AUDIENCE || "agentrelay";
    const pushGrant = inputs.appUrl
      ? await tokenForPush({ token, expiresAt }, () =>
          askPushToken(inputs.appUrl, attemptRequest, audience, reportKey),
        )
      : { token };
    // The commit the runner made and checked, from its own git directory: never the agent's HEAD.
    const push = await checkout.raw(
      ["push", "-q", ...(fresh ? ["--force"] : []), "origin", `${result.commit}:refs/heads/${branch}`],
      undefined,
      pushGrant.token === token ? auth : gitAuth(pushGrant.token),
    );
    if (push.code !== 0) {
      result = {
        ...failedAttempt(`pushing ${branch} failed: ${mask(push.stderr.trim())}`),
        costMicros: result.costMicros,
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

  const capMicros = state.tasks[task.id]?.attempts[inputs.attempt - 1]?.capMicros ?? null;
  return finishJob(job, result, pushed, capMicros);
}
