/**
 * Branch work for local runs, on a real repository: integration branches, task worktrees, and merges
 * made without touching anyone's working tree (`git merge-tree --write-tree`, then a merge commit and a
 * compare-and-swap ref update). A task "PR" is a merge commit of the task branch into the integration
 * branch.
 */
import { existsSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { git, gitRaw, inCheckout, withoutDrivers } from "../attempt/git.ts";

export async function branchExists(repo: string, branch: string): Promise<boolean> {
  return (await gitRaw(repo, ["rev-parse", "--verify", "--quiet", `refs/heads/${branch}`])).code === 0;
}

/** Creates the integration branch from its base if it does not exist yet. */
export async function prepareIntegration(repo: string, integration: string, base: string): Promise<void> {
  if (await branchExists(repo, integration)) return;
  if (!(await branchExists(repo, base))) throw new Error(`base branch '${base}' does not exist`);
  await git(repo, ["branch", integration, base]);
}

/**
 * The workstream's worktree (one per workstream, as in agentrelay; its tasks run one at a time),
 * switched to the task branch: a new branch from the integration branch on a first attempt, the
 * existing branch with its earlier commits on a retry. Leftovers of the previous task are discarded,
 * a `.git` an agent replaced included. Returns the worktree's git directory (in the repository's
 * own), through which the runner works in it: never the `.git` in the worktree, which agents write.
 */
export async function workstreamCheckout(
  repo: string,
  dir: string,
  branch: string,
  integration: string,
): Promise<string> {
  if (!existsSync(dir)) {
    await git(repo, ["worktree", "prune"]);
    await git(repo, ["worktree", "add", "-q", "--detach", dir, integration]);
  }
  const gitDir = await worktreeGitDir(repo, dir);
  rmSync(join(dir, ".git"), { recursive: true, force: true });
  writeFileSync(join(dir, ".git"), `gitdir: ${gitDir}\n`);
  const checkout = inCheckout({ workTree: dir, gitDir });
  await checkout.git(["reset", "-q", "--hard"]);
  await checkout.git(["clean", "-q", "-f", "-d"]);
  if (await branchExists(repo, branch)) await checkout.git(["checkout", "-q", branch]);
  else await checkout.git(["checkout", "-q", "-b", branch, integration]);
  return gitDir;
}

/** The git directory of the worktree at `dir`, found from the repository's side (its `worktrees/`). */
async function worktreeGitDir(repo: string, dir: string): Promise<string> {
  const common = resolve(repo, await git(repo, ["rev-parse", "--git-common-dir"]));
  const wanted = realpathSync(dir);
  for (const name of readdirSync(join(common, "worktrees"))) {
    const pointer = readFileSync(join(common, "worktrees", name, "gitdir"), "utf8").trim();
    if (existsSync(dirname(pointer)) && realpathSync(dirname(pointer)) === wanted)
      return join(common, "worktrees", name);
  }
  throw new Error(`git knows no worktree at ${dir}: remove the directory and run again`);
}

export async function commitsAhead(repo: string, from: string, to: string): Promise<number> {
  return Number(await git(repo, ["rev-list", "--count", `${to}..${from}`]));
}

/** Where a branch is checked out, if anywhere. */
async function checkedOutAt(repo: string, branch: string): Promise<string | null> {
  const list = await git(repo, ["worktree", "list", "--porcelain"]);
  let path: string | null = null;
  for (const line of list.split("\n")) {
    if (line.startsWith("worktree ")) path = line.slice("worktree ".length);
    if (line === `branch refs/heads/${branch}`) return path;
  }
  return null;
}

/** Deletes a branch if it exists. */
export async function deleteBranch(repo: string, branch: string): Promise<void> {
  if (await branchExists(repo, branch)) await git(repo, ["branch", "-D", branch]);
}

/** A merge done, or why not (with the files that conflict, when that is why). */
export type MergeResult = { ok: true; sha: string } | { ok: false; reason: string; conflicts?: string[] };

/**
 * Merges `source` into `target` with a merge commit. Fails (changing nothing) on a conflict; a
 * source already merged is a merge done (a repeated request changes nothing).
 */
export async function mergeBranch(
  repo: string,
  source: string,
  target: string,
  message: string,
  /** The target and source commits the merge must be of (verified together): else it changes nothing. */
  expected?: { base: string; head: string },
): Promise<MergeResult> {
  if ((await gitRaw(repo, ["merge-base", "--is-ancestor", source, target])).code === 0)
    return { ok: true, sha: await git(repo, ["rev-parse", `refs/heads/${target}`]) };
  if (expected) {
    const [old, head] = await Promise.all(
      [target, source].map((b) => git(repo, ["rev-parse", `refs/heads/${b}`])),
    );
    if (old !== expected.base || head !== expected.head)
      return { ok: false, reason: `'${target}' or '${source}' moved since they were verified together` };
  }
  const worktree = await checkedOutAt(repo, target);
  if (worktree) {
    // The user has the target checked out: merge there, so their working tree stays consistent.
    const status = await git(worktree, ["status", "--porcelain", "--untracked-files=no"]);
    if (status)
      return {
        ok: false,
        reason: `'${target}' is checked out at ${worktree} with uncommitted changes: commit or stash them, then run again`,
      };
    const merged = await gitRaw(worktree, [
      ...(await withoutDrivers(worktree)),
      "merge",
      "--no-ff",
      "--no-edit",
      "-m",
      message,
      source,
    ]);
    if (merged.code !== 0) {
      const conflicts = (await git(worktree, ["diff", "--name-only", "--diff-filter=U"]))
        .split("\n")
        .filter(Boolean);
      await gitRaw(worktree, ["merge", "--abort"]);
      return { ok: false, reason: `merge conflict in ${conflicts.join(", ") || "the branches"}`, conflicts };
    }
    return { ok: true, sha: await git(worktree, ["rev-parse", "HEAD"]) };
  }
  const old = expected?.base ?? (await git(repo, ["rev-parse", `refs/heads/${target}`]));
  const head = expected?.head ?? (await git(repo, ["rev-parse", `refs/heads/${source}`]));
  // The task branch's .gitattributes may name a merge driver its agent configured: none runs.
  const tree = await gitRaw(repo, [
    ...(await withoutDrivers(repo)),
    "merge-tree",
    "--write-tree",
    "--name-only",
    old,
    head,
  ]);
  if (tree.code !== 0) {
    // The tree, then the conflicted files, then a blank line and git's messages.
    const lines = tree.stdout.split("\n");
    const end = lines.indexOf("", 1);
    const conflicts = lines.slice(1, end === -1 ? undefined : end).filter(Boolean);
    return { ok: false, reason: `merge conflict in ${conflicts.join(", ") || "the branches"}`, conflicts };
  }
  const commit = await git(repo, [
    "commit-tree",
    tree.stdout.split("\n")[0]!,
    "-p",
    old,
    "-p",
    head,
    "-m",
    message,
  ]);
  const update = await gitRaw(repo, ["update-ref", `refs/heads/${target}`, commit, old]);
  if (update.code !== 0) return { ok: false, reason: `'${target}' moved during the merge` };
  return { ok: true, sha: commit };
}
