/**
 * `agentrelay doctor [--repo OWNER/NAME] [--api-url URL]`: reads the repository's settings through
 * GitHub's API and names, one line each with its fix, everything that would stall a run or silently
 * skip work (github/doctor.ts). The repository is the one named, else the GitHub remote `origin` of
 * the repository the command runs in; the token is GITHUB_TOKEN, else GH_TOKEN, else the GitHub
 * CLI's (`gh auth token`). Exit 0 when nothing is found, 1 when something is (or it cannot read).
 */
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { Octokit } from "@octokit/rest";
import { loadGraphFile } from "../../graph/load.ts";
import { buildPlan } from "../../plan/plan.ts";
import { unitGatesNote } from "../../plan/resolution.ts";
import { findings, mergeNotes, readRepoFacts } from "../../github/doctor.ts";
import type { GitHubClient } from "../../github/client.ts";
import { statusOf } from "../../github/client.ts";
import type { WorkflowFile } from "../../github/workflow-files.ts";
import { EXIT, type Io, UsageError } from "../io.ts";
import { gitHubToken, remoteRepository } from "./github-remote.ts";

export class DoctorError extends Error {
  override name = "DoctorError";
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
): Promise<{ findings: string[]; notes: string[] }> {
  const [owner, repo] = repository.split("/") as [string, string];
  try {
    const facts = await readRepoFacts(octokit, owner, repo, {
      settings: true,
      ...(workflows ? { workflows } : {}),
    });
    return { findings: findings(facts), notes: mergeNotes(facts) };
  } catch (error) {
    const status = statusOf(error);
    if (status === 401)
      throw new DoctorError(
        "GitHub refused the token (401): set a valid GITHUB_TOKEN, or run `gh auth login`",
      );
    if (status === 404 || status === 403)
      throw new DoctorError(
        `${repository}: not found, or the token may not read it: use a token with read access to it`,
      );
    if (status === undefined)
      throw new DoctorError(
        `GitHub could not be reached: ${(error as Error).message}: check your network, then run again`,
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
  if (options.repo !== undefined && !/^[A-Za-z0-9-]+\/[A-Za-z0-9_.-]+$/.test(options.repo))
    throw new UsageError(`--repo expects OWNER/NAME, got '${options.repo}'`);
  const dir = options.dir ?? env.INIT_CWD ?? process.cwd();
  const repository = options.repo ?? remoteRepository(dir);
  if (!repository) throw new DoctorError(`${dir} has no GitHub remote named origin: pass --repo OWNER/NAME`);
  const token = gitHubToken(env);
  if (!token)
    throw new DoctorError("no GitHub token: set GITHUB_TOKEN (or GH_TOKEN), or log in with `gh auth login`");
  const apiUrl = options.apiUrl ?? env.GITHUB_API_URL ?? "https://api.github.com";
  const found = await diagnose(doctorClient(token, apiUrl), repository, options.workflows);
  found.notes.push(...graphNotes(dir));
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

/** The lines doctor prints: how merges will go, then each problem with its fix. */
export function report(repository: string, found: { findings: string[]; notes: string[] }): string {
  return [
    ...found.notes.map((n) => `${repository}: ${n}`),
    ...(found.findings.length === 0
      ? [`${repository}: nothing found that would stall a run`]
      : found.findings.map((f) => `${repository}: ${f}`)),
  ].join("\n");
}
