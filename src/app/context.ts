/**
 * From an event's repository to what the GitHub adapter needs, and reading files at a commit.
 */
import { parseParamsFile } from "../graph/params.ts";
import { type AppConfig, type GitHubClient, readFileAt, type RepoContext } from "../github/client.ts";
import { paramsFileOf } from "../protocol/run-source.ts";

export interface Repository {
  name: string;
  owner: { login: string };
  default_branch: string;
}

/** The adapter's view of one repository, for an installation's client. */
export function repoContextOf(
  octokit: unknown,
  repository: Repository,
  config: AppConfig,
  log: (message: string) => void,
): RepoContext {
  return {
    octokit: octokit as GitHubClient,
    owner: repository.owner.login,
    repo: repository.name,
    defaultBranch: repository.default_branch,
    config,
    now: config.now ?? Date.now,
    log,
  };
}

/** The params file beside a graph, at a commit (empty when there is none). */
export async function readParams(
  ctx: RepoContext,
  graphPath: string,
  ref: string,
): Promise<Record<string, unknown>> {
  const file = paramsFileOf(graphPath);
  return parseParamsFile(file, await readFileAt(ctx, file, ref));
}
