/**
 * `agentrelay doctor [--repo OWNER/NAME] [--api-url URL]`: reads the repository's settings through
 * GitHub's API and names, one line each with its fix, everything that would stall a run or silently
 * skip work (github/doctor.ts). The repository is the one named, else the GitHub remote `origin` of
 * the repository the command runs in; the token is GITHUB_TOKEN, else GH_TOKEN, else the GitHub
 * CLI's (`gh auth token`). Exit 0 when nothing is found, 1 when something is (or it cannot read).
 */
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { Octokit } from "@octokit/rest";
import { loadGraphFile } from "../../graph/load.ts";
import type { Graph } from "../../graph/model.ts";
import { buildPlan } from "../../plan/plan.ts";
import { unitGatesNote } from "../../plan/resolution.ts";
import { MERGE_METHODS } from "../../github/branch-policy.ts";
import { reachOfRepositories } from "../../github/access.ts";
import { findings, mergeNotes, readRepoFacts } from "../../github/doctor.ts";
import type { GitHubClient } from "../../github/client.ts";
import { DEFAULT_CONFIG, readFileAt, statusOf } from "../../github/client.ts";
import { dispatchInputNames, inputsNotTaken } from "../../github/task-workflow.ts";
import { parseWorkflow, type WorkflowFile } from "../../github/workflow-files.ts";
import { EXIT, type Io } from "../io.ts";
import { checkoutBranch, checkoutRoot, repositoryAndToken } from "./github-remote.ts";
import { localWorkflowFiles } from "./orchestrator-triggers.ts";

export class DoctorError extends Error {
  override name = "DoctorError";
}

/** GitHub's API could not be reached: why, in words (never a raw ENOTFOUND). */
export class Unreachable extends Error {
  override name = "Unreachable";
}

/** The error codes of a failed connection, in words. */
const NETWORK_WORDS: Record<string, string> = {
  ENOTFOUND: "its name does not resolve (offline, or no DNS)",
  EAI_AGAIN: "its name does not resolve (offline, or no DNS)",
  ECONNREFUSED: "nothing answers at that address",
  ECONNRESET: "the connection was cut",
  ETIMEDOUT: "it does not answer",
  UND_ERR_CONNECT_TIMEOUT: "it does not answer",
  ENETUNREACH: "no network route to it",
  EHOSTUNREACH: "no network route to it",
  CERT_HAS_EXPIRED: "its TLS certificate is not valid",
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: "its TLS certificate cannot be verified (a proxy?)",
  SELF_SIGNED_CERT_IN_CHAIN: "its TLS certificate cannot be verified (a proxy?)",
};

/** Why a request never got an answer from `apiUrl`, or null when it did (an HTTP status). */
export function unreachable(error: unknown, apiUrl: string): string | null {
  let host: string;
  try {
    host = new URL(apiUrl).host;
  } catch {
    return `the API address ${apiUrl} is not a URL`;
  }
  const status = statusOf(error);
  // Octokit answers a request that got no response as status 500 with the cause attached.
  const seen: unknown[] = [];
  for (let e = error; e && typeof e === "object" && !seen.includes(e); e = (e as { cause?: unknown }).cause) {
    seen.push(e);
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string" && NETWORK_WORDS[code]) return `${host}: ${NETWORK_WORDS[code]}`;
    const message = (e as { message?: unknown }).message;
    if (typeof message === "string" && /bad port|invalid url/i.test(message))
      return `the API address ${apiUrl} is not a valid URL`;
  }
  if (status === undefined || (status === 500 && seen.some((e) => (e as Error).name === "TypeError")))
    return `${host} could not be reached`;
  return null;
}

export interface DoctorOptions {
  /** OWNER/NAME; by default the GitHub remote of the repository in `dir`. */
  repo?: string | undefined;
  apiUrl?: string | undefined;
  /** Where to find the repository when `repo` is not given (default: where the command runs). */
  dir?: string;
  /** The workflow files to judge instead of the default branch's (init's, not pushed yet). */
  workflows?: WorkflowFile[];
}

/** What doctor finds in a repository, and how it will be merged into. */
export async function diagnose(
  octokit: GitHubClient,
  repository: string,
  workflows?: WorkflowFile[],
  apiUrl = "https://api.github.com",
): Promise<{ findings: string[]; notes: string[] }> {
  const [owner, repo] = repository.split("/") as [string, string];
  try {
    const facts = await readRepoFacts(octokit, owner, repo, {
      settings: true,
      ...(workflows ? { workflows } : {}),
    });
    return { findings: findings(facts), notes: mergeNotes(facts) };
  } catch (error) {
    const why = unreachable(error, apiUrl);
    if (why) throw new Unreachable(why);
    const status = statusOf(error);
    if (status === 401)
      throw new DoctorError(
        "GitHub refused the token (401): set a valid GITHUB_TOKEN, or run `gh auth login`",
      );
    if (status === 404 || status === 403)
      throw new DoctorError(
        `${repository}: not found, or the token may not read it: use a token with read access to it`,
      );
    throw error;
  }
}

/** A client for GitHub's REST API (or a GitHub Enterprise Server's at `apiUrl`). */
export const doctorClient = (token: string, apiUrl: string): GitHubClient =>
  new Octokit({
    auth: token,
    baseUrl: apiUrl,
    request: { fetch: globalThis.fetch, retries: 0 },
    log: { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} },
  }) as unknown as GitHubClient;

export async function doctorCommand(
  options: DoctorOptions,
  io: Io,
  env: NodeJS.ProcessEnv = process.env,
): Promise<number> {
  const { dir, repository, token } = repositoryAndToken(
    options,
    env,
    (line) => new DoctorError(line),
    "no GitHub token: set GITHUB_TOKEN (or GH_TOKEN), or log in with `gh auth login`",
  );
  const apiUrl = options.apiUrl ?? env.GITHUB_API_URL ?? "https://api.github.com";
  let found: { findings: string[]; notes: string[] };
  const client = doctorClient(token, apiUrl);
  try {
    found = await diagnose(client, repository, options.workflows, apiUrl);
  } catch (error) {
    if (!(error instanceof Unreachable)) throw error;
    // What needs no network is still checked: the checkout's workflow files.
    const root = checkoutRoot(dir);
    const local = root ? offlineFindings(localWorkflowFiles(root), checkoutBranch(root) ?? "main") : [];
    io.out(
      [
        ...local.map((f) => `${repository} (this checkout): ${f}`),
        `${repository}: GitHub's side was not checked (${error.message}): merge methods, rules and required checks, secrets and Actions settings; ${root ? "the checkout's workflow files were" : "nothing was"}: connect, then run doctor again`,
      ].join("\n"),
    );
    return EXIT.failed;
  }
  found.notes.push(...graphNotes(dir));
  const reach = await graphReach(client, dir, repository);
  found.notes.push(...reach.notes);
  found.findings.push(...reach.findings);
  io.out(report(repository, found));
  return found.findings.length > 0 ? EXIT.failed : EXIT.ok;
}

/**
 * What the graphs under `.workflow/` of the repository at `dir` leave unchecked: one line per graph
 * whose workstreams are verified by their tasks' gates alone (a graph that does not load is
 * `agentrelay validate`'s to report).
 */
export function graphNotes(dir: string): string[] {
  const folder = join(dir, ".workflow");
  let files: string[];
  try {
    files = readdirSync(folder)
      .filter((f) => /\.ya?ml$/.test(f))
      .sort();
  } catch {
    return [];
  }
  return files.flatMap((file) => {
    try {
      const note = unitGatesNote(buildPlan(loadGraphFile(join(folder, file))));
      return note ? [`.workflow/${file}: ${note}`] : [];
    } catch {
      return [];
    }
  });
}

/**
 * Which of the repositories the graphs under `.workflow/` name the token reaches, and with what: a
 * note for each graph whose repositories it reaches, a finding (with the fix) for each it does not.
 */
export async function graphReach(
  octokit: GitHubClient,
  dir: string,
  repository: string,
): Promise<{ notes: string[]; findings: string[] }> {
  const notes: string[] = [];
  const found: string[] = [];
  let variables: Map<string, string> | null | undefined;
  for (const file of graphFiles(dir)) {
    let graph;
    try {
      graph = loadGraphFile(join(dir, ".workflow", file));
    } catch {
      continue;
    }
    if (!graph.repositories?.length) continue;
    // With the app, each workstream's task workflow must take what the app sends it.
    const app = !existsSync(join(dir, ".github/workflows/agentrelay.yml"));
    const reach = await reachOfRepositories(
      octokit,
      graph,
      repository,
      "token",
      app ? DEFAULT_CONFIG.taskWorkflow : undefined,
    );
    const reached = reach.filter((r) => !r.problem);
    if (reached.length > 0)
      notes.push(
        `.workflow/${file} spans repositories; the token reaches ${reached.map((r) => `${r.fullName}${r.access ? ` (${r.access})` : ""}`).join(", ")}`,
      );
    found.push(...reach.filter((r) => r.problem).map((r) => `.workflow/${file}: ${r.problem}`));
    // Without an app, the orchestrator acts with its own token, whatever the person's token reaches.
    if (existsSync(join(dir, ".github/workflows/agentrelay.yml"))) {
      variables ??= await repositoryVariables(octokit, repository);
      const said = await orchestratorReach(octokit, graph, repository, variables);
      notes.push(...said.notes.map((n) => `.workflow/${file}: ${n}`));
      found.push(...said.findings.map((f) => `.workflow/${file}: ${f}`));
    }
  }
  return { notes, findings: found };
}

/** The repository's Actions variables by name, or null when the token may not read them. */
async function repositoryVariables(
  octokit: GitHubClient,
  repository: string,
): Promise<Map<string, string> | null> {
  const [owner, repo] = repository.split("/") as [string, string];
  try {
    const { data } = await octokit.request("GET /repos/{owner}/{repo}/actions/variables", {
      owner,
      repo,
      per_page: 30,
    });
    return new Map(
      ((data as { variables?: { name: string; value: string }[] }).variables ?? []).map((v) => [
        v.name,
        v.value,
      ]),
    );
  } catch (error) {
    if (statusOf(error) === 403 || statusOf(error) === 404) return null;
    throw error;
  }
}

/**
 * What the orchestrator workflow (no app) needs for a graph that spans repositories: a registered
 * app's token (AGENTRELAY_APP_CLIENT_ID) minted for every repository the graph names (the variable
 * AGENTRELAY_REPOSITORIES, which the workflow hands to actions/create-github-app-token); and each
 * workstream's repository set up as well.
 */
async function orchestratorReach(
  octokit: GitHubClient,
  graph: Graph,
  repository: string,
  variables: Map<string, string> | null,
): Promise<{ notes: string[]; findings: string[] }> {
  const notes: string[] = [];
  const findings: string[] = [];
  const [owner, own] = repository.split("/") as [string, string];
  if (variables === null)
    notes.push(
      "the token may not read this repository's Actions variables, so AGENTRELAY_APP_CLIENT_ID and AGENTRELAY_REPOSITORIES were not checked",
    );
  else if (!variables.has("AGENTRELAY_APP_CLIENT_ID"))
    findings.push(
      ...(await reachOfRepositories(octokit, graph, repository, "github_token")).map((r) => r.problem!),
    );
  else {
    const minted = (variables.get("AGENTRELAY_REPOSITORIES") ?? "")
      .split(/[\s,]+/)
      .filter(Boolean)
      .map((n) => n.toLowerCase());
    const needed = [
      own,
      ...(graph.repositories ?? [])
        .filter((r) => r.fullName.toLowerCase().startsWith(`${owner.toLowerCase()}/`))
        .map((r) => r.fullName.split("/")[1]!),
    ].filter((n, i, all) => all.findIndex((m) => m.toLowerCase() === n.toLowerCase()) === i);
    const missing = needed.filter((n) => minted.length > 0 && !minted.includes(n.toLowerCase()));
    if (minted.length === 0 || missing.length > 0)
      findings.push(
        `the orchestrator's app token is minted for ${minted.length ? minted.join(",") : "this repository only"} (the variable AGENTRELAY_REPOSITORIES): set it to ${[...new Set([...minted, ...needed.map((n) => n.toLowerCase())])].join(",")}`,
      );
  }
  for (const other of (graph.repositories ?? []).filter(
    (r) => r.fullName.toLowerCase() !== repository.toLowerCase(),
  ))
    findings.push(...(await workstreamRepository(octokit, other.fullName, own)));
  return { notes, findings };
}

/**
 * Without an app, each workstream's repository runs its jobs and hands their ends over
 * (docs/github.md, workflow mode across repositories): it needs the task workflow that mints a token
 * to read the run (`init --no-app` writes it), and the registered app's variable with
 * AGENTRELAY_REPOSITORIES naming the graph's repository (`ownName`). Its secrets cannot be read.
 */
async function workstreamRepository(
  octokit: GitHubClient,
  fullName: string,
  ownName: string,
): Promise<string[]> {
  const [owner, repo] = fullName.split("/") as [string, string];
  const same = `as in this repository (organization variables and secrets make it one setting), with the secrets AGENTRELAY_APP_PRIVATE_KEY and AGENTRELAY_REPORT_SECRET this repository has`;
  // A file this token may not read counts as missing: the line says what to install either way.
  const path = `.github/workflows/${DEFAULT_CONFIG.taskWorkflow}`;
  const task = await readFileAt({ octokit, owner, repo }, path).catch((error: unknown) => {
    if (statusOf(error) === 403) return null;
    throw error;
  });
  const found: string[] = [];
  const takes = dispatchInputNames({ elsewhere: true, workflowMode: true });
  if (task === null || inputsNotTaken(path, task, takes))
    found.push(
      `${fullName}: ${task === null ? "has no task workflow" : "has a task workflow that cannot read a run in another repository"}, and its workstream's jobs run there: run \`agentrelay init --no-app\` in it and push, and give it the variable AGENTRELAY_APP_CLIENT_ID ${same}`,
    );
  const variables = await repositoryVariables(octokit, fullName);
  const minted = (variables?.get("AGENTRELAY_REPOSITORIES") ?? "")
    .split(/[\s,]+/)
    .map((n) => n.toLowerCase());
  if (variables && (!variables.has("AGENTRELAY_APP_CLIENT_ID") || !minted.includes(ownName.toLowerCase())))
    found.push(
      `${fullName}: its orchestrator cannot reach the run here: give it the variables AGENTRELAY_APP_CLIENT_ID and AGENTRELAY_REPOSITORIES (every repository of the graph, ${ownName} among them) ${same}`,
    );
  return found;
}

/** The graph files under `.workflow/` of the checkout at `dir`, sorted (none when there is no folder). */
function graphFiles(dir: string): string[] {
  try {
    return readdirSync(join(dir, ".workflow"))
      .filter((f) => /\.ya?ml$/.test(f) && !/\.params\.ya?ml$/.test(f))
      .sort();
  } catch {
    return [];
  }
}

/**
 * What doctor finds in workflow files alone, with no network: unreadable files, CI that skips
 * agentrelay's branches, agentrelay's own files older than init writes them.
 */
export function offlineFindings(workflows: WorkflowFile[], defaultBranch: string): string[] {
  const open = {
    methods: [...MERGE_METHODS],
    linearHistory: false,
    requiredChecks: [],
    allowed: { merge: true, squash: true, rebase: true },
    directUpdate: true,
    strictChecks: false,
  };
  return findings({
    defaultBranch,
    defaultPolicy: open,
    integrationPolicy: open,
    workflows: workflows.map(parseWorkflow),
    token: null,
    secrets: null,
    variables: null,
    actionsCanCreatePullRequests: null,
  });
}

/** The lines doctor prints: how merges will go, then each problem with its fix. */
export function report(repository: string, found: { findings: string[]; notes: string[] }): string {
  return [
    ...found.notes.map((n) => `${repository}: ${n}`),
    ...(found.findings.length === 0
      ? [`${repository}: nothing found that would stall a run`]
      : found.findings.map((f) => `${repository}: ${f}`)),
  ].join("\n");
}
