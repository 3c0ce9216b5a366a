/**
 * The slice of Octokit the GitHub adapter uses (Probot's context.octokit and @octokit/rest both fit),
 * and the facts about one repository every handler needs.
 */
import type { Octokit } from "@octokit/rest";
import type { StateCache } from "./state-cache.ts";

export type GitHubClient = Pick<Octokit, "rest" | "request" | "graphql" | "paginate">;

export interface AppConfig {
  /** File name of the task workflow under .github/workflows/. */
  taskWorkflow: string;
  /** Audience the jobs' OIDC tokens must carry. */
  oidcAudience: string;
  /** OIDC issuer (GitHub's, or a test's). */
  oidcIssuer?: string;
  /** Minimum time between two edits of a run's status comments. */
  statusIntervalMs: number;
  /** Bot accounts whose slash commands are accepted (others are ignored). */
  allowedBots: string[];
  /** Wall-clock limit of one attempt before the reconciler times it out. */
  attemptTimeoutMs: number;
  /** This replica's memory of run-state versions (the app gives each replica its own). */
  stateCache?: StateCache;
  /**
   * Set when the orchestrator runs as a workflow, with no app server (app/workflow.ts): jobs then hand
   * their reports over as artifacts of their own runs, and `token` says whose token the orchestrator
   * holds: a registered app's installation token, or the workflow's GITHUB_TOKEN, whose pull requests
   * start no workflow. `reportSecret` (AGENTRELAY_REPORT_SECRET) is what the reports' HMACs derive
   * from (protocol/report-key.ts): with it, a report without its HMAC is not believed.
   */
  workflow?: { token: "app" | "github_token"; reportSecret?: string | null };
  /** The clock the app reads (Date.now; benches run the app on a simulated one). */
  now?: () => number;
}

export const DEFAULT_CONFIG: AppConfig = {
  taskWorkflow: "agentrelay-task.yml",
  oidcAudience: "agentrelay",
  statusIntervalMs: 10_000,
  allowedBots: [],
  attemptTimeoutMs: 2 * 60 * 60_000,
};

export function configFromEnv(env: NodeJS.ProcessEnv): AppConfig {
  const number = (name: string, fallback: number) => (env[name] ? Number(env[name]) : fallback);
  return {
    taskWorkflow: env.AGENTRELAY_TASK_WORKFLOW || DEFAULT_CONFIG.taskWorkflow,
    oidcAudience: env.AGENTRELAY_OIDC_AUDIENCE || DEFAULT_CONFIG.oidcAudience,
    ...(env.AGENTRELAY_OIDC_ISSUER ? { oidcIssuer: env.AGENTRELAY_OIDC_ISSUER } : {}),
    statusIntervalMs: number("AGENTRELAY_STATUS_INTERVAL_MS", DEFAULT_CONFIG.statusIntervalMs),
    allowedBots: (env.AGENTRELAY_ALLOWED_BOTS ?? "")
      .split(",")
      .map((s) => s.trim())
      .filter(Boolean),
    attemptTimeoutMs: number("AGENTRELAY_ATTEMPT_TIMEOUT_MS", DEFAULT_CONFIG.attemptTimeoutMs),
  };
}

export interface RepoContext {
  octokit: GitHubClient;
  owner: string;
  repo: string;
  defaultBranch: string;
  config: AppConfig;
  now: () => number;
  log: (message: string) => void;
}

/** A page of the repository on the web (GHE_HOST, as Probot reads it, for GitHub Enterprise Server). */
export const repoPage = (ctx: Pick<RepoContext, "owner" | "repo">, path: string): string =>
  `https://${process.env.GHE_HOST || "github.com"}/${ctx.owner}/${ctx.repo}/${path}`;

/** The page of issue `issue` of the repository `OWNER/NAME` (null while there is none). */
export function issueUrl(fullName: string, issue: number | null): string | null {
  const [owner = "", repo = ""] = fullName.split("/");
  return issue === null ? null : repoPage({ owner, repo }, `issues/${issue}`);
}

/** The page of an attempt's Actions run. */
export const jobUrl = (ctx: Pick<RepoContext, "owner" | "repo">, job: string): string =>
  repoPage(ctx, `actions/runs/${job}`);

/** The HTTP status of an Octokit error (undefined for other errors). */
export const statusOf = (error: unknown): number | undefined => (error as { status?: number }).status;

/**
 * A file's text at a commit (the contents API, never a branch head; the default branch when no `ref`
 * is given), or null when it does not exist.
 */
export async function readFileAt(
  at: Pick<RepoContext, "octokit" | "owner" | "repo">,
  path: string,
  ref?: string,
): Promise<string | null> {
  try {
    const { data } = await at.octokit.rest.repos.getContent({
      owner: at.owner,
      repo: at.repo,
      path,
      ...(ref === undefined ? {} : { ref }),
      mediaType: { format: "raw" },
    });
    return data as unknown as string;
  } catch (error) {
    if (statusOf(error) === 404) return null;
    throw error;
  }
}

export const messageOf = (error: unknown): string => {
  const e = error as { response?: { data?: { message?: string } }; message?: string };
  return e.response?.data?.message ?? e.message ?? String(error);
};

/** The messages of a 422's validation errors (GitHub puts the reason there, not in `message`). */
export const validationDetails = (error: unknown): string => {
  const e = error as { response?: { data?: { errors?: ({ message?: string } | string)[] } } };
  return (e.response?.data?.errors ?? [])
    .map((x) => (typeof x === "string" ? x : (x.message ?? "")))
    .join("; ");
};

/** The run-name the task workflow gives each attempt's run (see templates/workflows/agentrelay-task.yml). */
export const attemptRunName = (run: string, task: string, attempt: number): string =>
  `agentrelay ${run} ${task} attempt ${attempt}`;

export function parseAttemptRunName(title: string): { run: string; task: string; attempt: number } | null {
  const m = /^agentrelay (\S+\/\d+) (\S+) attempt (\d+)$/.exec(title);
  return m ? { run: m[1]!, task: m[2]!, attempt: Number(m[3]) } : null;
}
