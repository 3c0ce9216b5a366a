/**
 * A git directory the runner owns, for everything it does once an agent has run: commit the agent's
 * work, diff it for the output checks, merge, push. The agent could write its checkout's `.git`
 * (hooks, configuration: fsmonitor, insteadOf, credential helpers, filter and merge drivers, includes),
 * so the runner never runs git there again. It makes a new, empty git directory (after the agent's
 * processes have ended, so no agent ever saw it), with a configuration of its own and no hooks, and
 * reads the agent's tree into it as data: in-tree `.gitattributes` can name a filter or a driver, but
 * only configuration defines one, and this configuration defines none. The agent's object store is
 * used as data too (GIT_OBJECT_DIRECTORY): an object git reads executes nothing, and an object the
 * agent forged fails the runner's git or the remote's check of what is pushed.
 *
 * Commits are named by object id (captured before the agent started), never by the agent's refs.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { git, gitRaw, type GitResult } from "./git.ts";

export interface RunnerRepo {
  /** The runner's git directory (new, empty, its own configuration). */
  readonly gitDir: string;
  /** The environment that points git at this directory (for a function that takes one). */
  readonly env: NodeJS.ProcessEnv;
  /** git in the runner's directory, with `workTree` (the agent's checkout, read as data) when given. */
  raw(args: string[], input?: string, env?: NodeJS.ProcessEnv): Promise<GitResult>;
  run(args: string[], input?: string, env?: NodeJS.ProcessEnv): Promise<string>;
  dispose(): void;
}

/**
 * A new git directory of the runner's, over `objectsDir` (the object store the commits live in) and
 * `workTree` (the agent's files; null when only objects are needed, as for a push).
 */
export async function runnerRepo(objectsDir: string, workTree: string | null): Promise<RunnerRepo> {
  const gitDir = mkdtempSync(join(tmpdir(), "agentrelay-runner-git-"));
  // No template: no sample hooks, no info/exclude of anyone's.
  await git(gitDir, ["init", "-q", "--bare", "--template=", gitDir]);
  if (workTree) await git(gitDir, ["--git-dir", gitDir, "config", "core.bare", "false"]);
  const env = {
    GIT_DIR: gitDir,
    GIT_OBJECT_DIRECTORY: objectsDir,
    ...(workTree ? { GIT_WORK_TREE: workTree } : {}),
  };
  const raw = (args: string[], input?: string, extra: NodeJS.ProcessEnv = {}) =>
    gitRaw(workTree ?? gitDir, args, input, { ...env, ...extra });
  return {
    gitDir,
    env,
    raw,
    run: async (args, input, extra) => {
      const result = await raw(args, input, extra);
      if (result.code !== 0)
        throw new Error(`git ${args.join(" ")}: ${result.stderr.trim() || `exit ${result.code}`}`);
      return result.stdout.trim();
    },
    dispose: () => rmSync(gitDir, { recursive: true, force: true }),
  };
}

/** Runs `use` with a new runner repository, removed afterwards. */
export async function withRunnerRepo<T>(
  objectsDir: string,
  workTree: string | null,
  use: (repo: RunnerRepo) => Promise<T>,
): Promise<T> {
  const repo = await runnerRepo(objectsDir, workTree);
  try {
    return await use(repo);
  } finally {
    repo.dispose();
  }
}

/** The object store of the repository at `dir`, as an absolute path (asked before an agent runs there). */
export async function objectStoreOf(dir: string): Promise<string> {
  return git(dir, ["rev-parse", "--path-format=absolute", "--git-path", "objects"]);
}

/**
 * The agent's tree, taken as data into the runner's index on top of `base` (a commit or tree id):
 * what is on disk, as `git add --all` sees it, without anything of the agent's configuration.
 */
export async function stageWorkTree(repo: RunnerRepo, base: string): Promise<string> {
  await repo.run(["read-tree", base]);
  await repo.run(["add", "--all"]);
  return repo.run(["write-tree"]);
}

/** Where an attempt started, captured before the agent runs: all the runner needs of the agent's repo. */
export interface AttemptStart {
  /** The commit the task branch had. */
  head: string;
  /** What the runner staged on it before the agent (the restored agent configuration): the checks' base. */
  tree: string;
  /** The commit of the base ref (commits after it are the task's work). */
  base: string;
  /** The branch checked out (`refs/heads/...`), or null when detached. */
  ref: string | null;
  objects: string;
}

/** `stage`: what is on disk is staged first (an attempt's start); otherwise the tree is the head's. */
export async function attemptStart(repoDir: string, baseRef: string, stage = true): Promise<AttemptStart> {
  const head = await git(repoDir, ["rev-parse", "HEAD"]);
  if (stage) await git(repoDir, ["add", "--all"]);
  const tree = await git(repoDir, stage ? ["write-tree"] : ["rev-parse", `${head}^{tree}`]);
  const base = await git(repoDir, ["rev-parse", "--verify", `${baseRef}^{commit}`]);
  const ref = (await gitRaw(repoDir, ["symbolic-ref", "-q", "HEAD"])).stdout.trim() || null;
  return { head, tree, base, ref, objects: await objectStoreOf(repoDir) };
}

/**
 * Points the agent's checkout at `commit` (its branch, and its index at `tree`), for whoever works in it
 * next (local mode merges the task branch). Only ref and index writes: no hook (core.hooksPath is
 * /dev/null on the command line), no filter (nothing is checked out), no fsmonitor.
 */
export async function pointCheckoutAt(
  repoDir: string,
  start: AttemptStart,
  commit: string,
  tree: string = commit,
): Promise<void> {
  if (start.ref) {
    await git(repoDir, ["update-ref", start.ref, commit]);
    await git(repoDir, ["symbolic-ref", "HEAD", start.ref]);
  } else await git(repoDir, ["update-ref", "--no-deref", "HEAD", commit]);
  await git(repoDir, ["read-tree", tree]);
}

/**
 * Pushes `commit` to `ref` at `url` from a new runner repository over `objects`: the URL is the
 * runner's (no insteadOf of anyone's), and the token reaches this one git only, through `auth`.
 */
export async function pushCommit(
  objects: string,
  url: string,
  commit: string,
  ref: string,
  force: boolean,
  auth: NodeJS.ProcessEnv,
): Promise<GitResult> {
  return withRunnerRepo(objects, null, (repo) =>
    repo.raw(["push", "-q", ...(force ? ["--force"] : []), url, `${commit}:${ref}`], undefined, auth),
  );
}
