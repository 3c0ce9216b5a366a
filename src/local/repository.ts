/**
 * What a local run needs of its repository, checked before anything is written: a directory that is
 * a git repository with a commit, and every branch the graph starts from or merges into. Each
 * problem is one line that says what to do.
 */
import { existsSync, statSync } from "node:fs";
import { gitRaw } from "../attempt/git.ts";
import type { Graph } from "../graph/model.ts";
import { branchExists } from "./branches.ts";

/** A local run cannot start or go on; the message says what to do. */
export class LocalRunError extends Error {
  override name = "LocalRunError";
}

/**
 * `workstreams`: those that live in this clone (default: those in the graph's own repository);
 * `option`: how the clone was given, for the messages (`--repo NAME=` for another repository's);
 * `which`: what the person should point at another clone instead.
 */
export async function checkRepository(
  repo: string,
  graph: Graph,
  workstreams = graph.workstreams.filter((w) => w.repository === undefined),
  option = "--repo ",
  which = option.slice(0, -1),
): Promise<void> {
  if (!existsSync(repo) || !statSync(repo).isDirectory())
    throw new LocalRunError(`${option}${repo}: no such directory; point ${which} at a git repository`);
  const top = await gitRaw(repo, ["rev-parse", "--show-toplevel"]);
  if (top.code !== 0)
    throw new LocalRunError(
      `${option}${repo} is not a git repository: run \`git init\` and commit something there, or point ${which} at one`,
    );
  if ((await gitRaw(repo, ["rev-parse", "--verify", "--quiet", "HEAD^{commit}"])).code !== 0)
    throw new LocalRunError(
      `${repo} has no commit yet: task branches start from one (git commit --allow-empty -m "start")`,
    );
  const own = `agentrelay/${graph.name}/`;
  for (const ws of workstreams) {
    for (const [field, branch] of [
      ["base_branch", ws.baseBranch],
      ["merge_target_branch", ws.mergeTargetBranch],
    ] as const) {
      if (branch.startsWith(own) || (await branchExists(repo, branch))) continue;
      const current = (await gitRaw(repo, ["branch", "--show-current"])).stdout.trim();
      const create = `create it (git branch ${branch}${current ? ` ${current}` : ""})`;
      // The implicit `default` workstream has no place to set a branch in the graph.
      const hint =
        ws.id === "default" ? create : `${create} or set ${field}${current ? `: ${current}` : ""} on it`;
      throw new LocalRunError(
        `workstream '${ws.id}' uses branch '${branch}', which ${repo} does not have: ${hint}`,
      );
    }
  }
}

/**
 * Whether the clone's checked-out tree has changes not committed (tracked files only): task branches
 * start from the last commit, so a run started now leaves them out, and is told so.
 */
export async function uncommittedChanges(repo: string): Promise<boolean> {
  // No such directory: the run's own check says so, with what to do.
  if (!existsSync(repo) || !statSync(repo).isDirectory()) return false;
  const status = await gitRaw(repo, ["status", "--porcelain", "--untracked-files=no"]);
  return status.code === 0 && status.stdout.trim() !== "";
}
