/**
 * Cleaning up after a finished local run. The run itself removes its worktrees when it finishes (a
 * worktree holds its task branch checked out, so `git branch -d` of it would fail); `agentrelay clean`
 * takes away the rest: its branches (work no other branch holds kept under
 * `refs/agentrelay/archive/<graph>/<N>/`) and its work directories. The run's state ref stays: it is
 * the run's record (`status`, `git log -p`), and a run that is still active or resumable is refused.
 */
import { rmSync } from "node:fs";
import { join } from "node:path";
import { git, gitRaw } from "../attempt/git.ts";
import type { RunState } from "../engine/types.ts";
import { LocalRunError } from "./repository.ts";

/**
 * Removes the worktrees of the graph's runs from a clone (their directories with them) and forgets
 * them; how many it removed. Branches stay: what they hold is the run's work.
 */
export async function removeWorktrees(repo: string, workRoot: string): Promise<number> {
  await gitRaw(repo, ["worktree", "prune"]);
  const list = await git(repo, ["worktree", "list", "--porcelain"]);
  const listed = list
    .split("\n")
    .filter((l) => l.startsWith("worktree "))
    .map((l) => l.slice("worktree ".length));
  let removed = 0;
  for (const dir of listed)
    if (
      dir.startsWith(`${workRoot}/`) &&
      (await gitRaw(repo, ["worktree", "remove", "--force", dir])).code === 0
    )
      removed++;
  await gitRaw(repo, ["worktree", "prune"]);
  return removed;
}

/** The line a finished run's report ends with when it removed its worktrees. */
export const cleanedLine = (file: string, repo: string): string =>
  `Cleaned up: the run's worktrees are removed; its branches stay (\`agentrelay clean ${file} --repo ${repo}\` removes them)`;

/** Why a run may not be cleaned, or null when it has finished. */
export function notCleanable(state: RunState, runner: number | null): string | null {
  if (runner !== null)
    return `run ${state.runKey} is active (a runner is live, pid ${runner}): wait for it to finish, then clean`;
  if (state.outcome === null)
    return `run ${state.runKey} has not finished and can be resumed: run it again (\`agentrelay run\`) or cancel it (\`agentrelay cancel\`), then clean`;
  return null;
}

export interface Cleaned {
  worktrees: number;
  /** Branches deleted whose work another branch holds. */
  deleted: string[];
  /** Branches deleted whose work only they held: kept under the archive ref. */
  archived: { branch: string; ref: string }[];
}

/**
 * Removes what finished run `runNumber` of `graph` left in a clone: its worktrees and the graph's
 * branches. A branch whose commits no other branch holds is kept under
 * `refs/agentrelay/archive/<graph>/<N>/<branch>` before it goes. The caller checked the run finished.
 */
export async function cleanRun(
  repo: string,
  graph: string,
  workRoot: string,
  runNumber: number,
): Promise<Cleaned> {
  const worktrees = await removeWorktrees(repo, workRoot);
  const prefix = `refs/heads/agentrelay/${graph}/`;
  const ours = (await git(repo, ["for-each-ref", "--format=%(objectname) %(refname)", prefix]))
    .split("\n")
    .filter(Boolean)
    .map((line) => line.split(" ") as [string, string]);
  const cleaned: Cleaned = { worktrees, deleted: [], archived: [] };
  for (const [sha, ref] of ours) {
    const branch = ref.slice("refs/heads/".length);
    // Held elsewhere: some branch that is not the run's contains the commit.
    const holders = (
      await git(repo, ["for-each-ref", "--contains", sha, "--format=%(refname)", "refs/heads/"])
    )
      .split("\n")
      .filter((r) => r && !r.startsWith(prefix));
    if (holders.length === 0) {
      const archived = `refs/agentrelay/archive/${graph}/${runNumber}/${branch}`;
      await git(repo, ["update-ref", archived, sha]);
      cleaned.archived.push({ branch, ref: archived });
    } else cleaned.deleted.push(branch);
    await git(repo, ["update-ref", "-d", ref, sha]);
  }
  return cleaned;
}

/**
 * The key of a stored run that finished and whose branches are gone (`agentrelay clean` took them),
 * or null: a run with nothing left in the clone but its record.
 */
export async function cleanedAway(
  repo: string,
  graph: string,
  stored: { state: RunState } | null,
): Promise<string | null> {
  if (!stored || stored.state.outcome === null) return null;
  const branches = await git(repo, [
    "for-each-ref",
    "--count=1",
    "--format=%(refname)",
    `refs/heads/agentrelay/${graph}/`,
  ]);
  return branches === "" ? stored.state.runKey : null;
}

/** Removes the graph's work directories (after every clone's worktrees went). */
export function clearWorkDirs(workRoot: string): void {
  for (const dir of ["workstreams", "resolutions", "tasks", "inbox", "replies", "home"])
    rmSync(join(workRoot, dir), { recursive: true, force: true });
}

/** What `agentrelay clean` says it did, one line for what went and one per branch kept in the archive. */
export function cleanedLines(runKey: string, cleaned: Cleaned): string[] {
  const branches = cleaned.deleted.length + cleaned.archived.length;
  return [
    `Cleaned run ${runKey}: ${cleaned.worktrees} worktree${cleaned.worktrees === 1 ? "" : "s"} and ${branches} branch${branches === 1 ? "" : "es"} removed; its state stays at refs/agentrelay/runs/${runKey}`,
    ...cleaned.archived.map(
      ({ branch, ref }) =>
        `kept: ${branch} held work no other branch has; it is at ${ref} (git branch ${branch.split("/").at(-1)} ${ref} to get it back)`,
    ),
  ];
}

/** A run that cannot be cleaned: the line says what to do. */
export class CleanRefused extends LocalRunError {}
