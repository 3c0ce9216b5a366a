/**
 * A graph's local runs: run N's state is the ref `refs/agentrelay/runs/<graph>/N`, and `run` resumes
 * the latest. Starting over (`run --new-run`) keeps the previous run's branches under
 * `refs/agentrelay/archive/<graph>/<N>/` (nothing is lost, and the new run's branches start fresh),
 * removes its worktrees and work directories, and gives the new run the next number.
 */
import { existsSync, readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { git, gitRaw } from "../attempt/git.ts";
import { LocalRunError } from "./repository.ts";

const runsPrefix = (graph: string) => `refs/agentrelay/runs/${graph}/`;

async function refs(repo: string, prefix: string): Promise<{ name: string; sha: string }[]> {
  const out = await git(repo, ["for-each-ref", "--format=%(objectname) %(refname)", prefix]);
  return out
    .split("\n")
    .filter(Boolean)
    .map((line) => {
      const [sha, name] = line.split(" ");
      return { sha: sha!, name: name! };
    });
}

/** The number of the graph's latest run, or null when it never ran here. */
export async function latestRunNumber(repo: string, graph: string): Promise<number | null> {
  const numbers = (await refs(repo, runsPrefix(graph)))
    .map((r) => Number(r.name.slice(runsPrefix(graph).length)))
    .filter((n) => Number.isInteger(n) && n > 0);
  return numbers.length > 0 ? Math.max(...numbers) : null;
}

/** Clears the way for a new run after run `previous`; the caller holds the run lock. */
export async function startOver(
  repo: string,
  graph: string,
  workRoot: string,
  previous: number,
): Promise<void> {
  const branches = await refs(repo, `refs/heads/agentrelay/${graph}/`);
  const workstreams = join(workRoot, "workstreams");
  const ours = existsSync(workstreams) ? readdirSync(workstreams).map((d) => join(workstreams, d)) : [];
  // A branch of the run that someone has checked out elsewhere would be pulled from under them. (A
  // worktree whose directory is gone holds nothing: another clone of the graph cleared it already.)
  await gitRaw(repo, ["worktree", "prune"]);
  const list = await git(repo, ["worktree", "list", "--porcelain"]);
  let path = "";
  for (const line of list.split("\n")) {
    if (line.startsWith("worktree ")) path = line.slice("worktree ".length);
    const branch = line.startsWith("branch ") ? line.slice("branch ".length) : null;
    if (branch && branches.some((b) => b.name === branch) && !ours.includes(path))
      throw new LocalRunError(
        `${branch.replace("refs/heads/", "")} is checked out at ${path}: switch that checkout to another branch, then start over`,
      );
  }
  for (const dir of ours) await gitRaw(repo, ["worktree", "remove", "--force", dir]);
  await gitRaw(repo, ["worktree", "prune"]);
  for (const { name, sha } of branches) {
    const archived = `refs/agentrelay/archive/${graph}/${previous}/${name.slice("refs/heads/".length)}`;
    await git(repo, ["update-ref", archived, sha]);
    await git(repo, ["update-ref", "-d", name, sha]);
  }
  for (const dir of ["workstreams", "tasks", "inbox", "replies"])
    rmSync(join(workRoot, dir), { recursive: true, force: true });
}
