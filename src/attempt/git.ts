/**
 * Runs git with an argument vector (never a shell string: ids and branch names never meet a shell),
 * as the runner: every git command the runner starts sees only the environment git needs (no
 * credential but the one a command is given, no Actions or OIDC variable), reads no system or global
 * configuration, and runs no hook and no fsmonitor, whatever a repository's configuration says. In a
 * checkout an agent works in, the runner goes through a git directory of its own (`inCheckout`),
 * never the `.git` the agent can rewrite.
 */
import { execFile, spawn } from "node:child_process";
import { chmodSync, chownSync, lstatSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { programPath } from "./programs.ts";

export interface GitResult {
  code: number;
  stdout: string;
  stderr: string;
}

const IDENTITY = {
  GIT_AUTHOR_NAME: "agentrelay",
  GIT_AUTHOR_EMAIL: "agentrelay@users.noreply.github.com",
  GIT_COMMITTER_NAME: "agentrelay",
  GIT_COMMITTER_EMAIL: "agentrelay@users.noreply.github.com",
};

/** The variables of the runner's own environment that git may see: none of them is a credential. */
const KEPT = ["PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "SYSTEMROOT"];

/**
 * The environment of a git command the runner starts: `extra` (a command's own credential, an index
 * file) and nothing else of the runner's, which holds the attempt's token, the job's OIDC request
 * variables and the Anthropic credential. System and global configuration are not read.
 */
export function runnerGitEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const kept = Object.fromEntries(
    KEPT.flatMap((name) => (process.env[name] ? [[name, process.env[name]]] : [])),
  );
  return {
    ...kept,
    GIT_CONFIG_NOSYSTEM: "1",
    GIT_CONFIG_GLOBAL: "/dev/null",
    GIT_ATTR_NOSYSTEM: "1",
    GIT_TERMINAL_PROMPT: "0",
    ...IDENTITY,
    ...extra,
  };
}

/**
 * Given before every command: whatever a repository's own configuration says, no hook runs (hooks
 * path: nowhere), no fsmonitor command, no credential helper, no attributes file outside the tree,
 * and no transport that runs a command (`ext::`).
 */
export const RUNNER_GIT_OPTIONS = [
  "-c",
  "core.hooksPath=/dev/null",
  "-c",
  "core.fsmonitor=false",
  "-c",
  "credential.helper=",
  "-c",
  "core.attributesFile=/dev/null",
  "-c",
  "protocol.ext.allow=never",
  // A repository's configuration (or a file it includes) may ask for a signing program, or a program
  // that asks for a password: git would run either. The runner signs nothing and asks no one.
  "-c",
  "commit.gpgSign=false",
  "-c",
  "tag.gpgSign=false",
  "-c",
  "core.askPass=",
];

export function gitRaw(
  cwd: string,
  args: string[],
  input?: string,
  env: NodeJS.ProcessEnv = {},
): Promise<GitResult> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      programPath("git"),
      [...RUNNER_GIT_OPTIONS, ...args],
      { cwd, env: runnerGitEnv(env), maxBuffer: 256 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === "number" ? error.code : -1) : 0;
        if (error && typeof error.code !== "number") return reject(error);
        resolve({ code, stdout, stderr });
      },
    );
    if (input !== undefined) child.stdin!.end(input);
  });
}

export class GitError extends Error {
  override name = "GitError";
}

/** Runs git and returns its trimmed output; throws with git's message on failure. */
export async function git(
  cwd: string,
  args: string[],
  input?: string,
  env?: NodeJS.ProcessEnv,
): Promise<string> {
  return ok(args, await gitRaw(cwd, args, input, env));
}

/** A command's trimmed output, or git's message as an error. */
function ok(args: string[], result: GitResult): string {
  if (result.code !== 0)
    throw new GitError(`git ${args.join(" ")}: ${result.stderr.trim() || `exit ${result.code}`}`);
  return result.stdout.trim();
}

/**
 * The contents of many objects at once (`rev:path` or object ids), with one `git cat-file --batch`:
 * null for each one that does not exist.
 */
export function catFiles(cwd: string, specs: readonly string[]): Promise<(string | null)[]> {
  if (specs.length === 0) return Promise.resolve([]);
  return new Promise((resolve, reject) => {
    const child = execFile(
      programPath("git"),
      [...RUNNER_GIT_OPTIONS, "cat-file", "--batch"],
      {
        cwd,
        env: runnerGitEnv(),
        encoding: "buffer",
        maxBuffer: 1024 * 1024 * 1024,
      },
      (error, stdout) => {
        if (error) return reject(new GitError(`git cat-file --batch: ${error.message}`));
        const out: (string | null)[] = [];
        let at = 0;
        for (let i = 0; i < specs.length; i++) {
          const end = stdout.indexOf(10, at);
          const header = stdout.subarray(at, end).toString("utf8");
          at = end + 1;
          if (header.endsWith(" missing") || header.endsWith(" ambiguous")) {
            out.push(null);
            continue;
          }
          const size = Number(header.split(" ")[2]);
          out.push(stdout.subarray(at, at + size).toString("utf8"));
          at += size + 1;
        }
        resolve(out);
      },
    );
    child.stdin!.end(`${specs.join("\n")}\n`);
  });
}

/**
 * The contents of `ids` (object ids or `rev:path`), in order, through one `git cat-file --batch` read
 * as a stream: an object is in memory only while the caller holds it, whatever the size of the rest
 * (null for one that does not exist). The caller bounds sizes first (`git cat-file --batch-check`).
 */
export async function* streamBlobs(
  cwd: string,
  ids: readonly string[],
  where: readonly string[] = [],
): AsyncGenerator<Buffer | null> {
  if (ids.length === 0) return;
  const child = spawn(programPath("git"), [...RUNNER_GIT_OPTIONS, ...where, "cat-file", "--batch"], {
    cwd,
    env: runnerGitEnv(),
    stdio: ["pipe", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
  const spawned = new Promise<void>((resolve, reject) => {
    child.once("spawn", resolve);
    child.once("error", reject);
  });
  child.stdin.on("error", () => {}); // git gone early: its output says why
  child.stdin.end(`${ids.join("\n")}\n`);
  const chunks = child.stdout[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  let pending: Buffer = Buffer.alloc(0);
  const failed = () => new GitError(`git cat-file --batch: ${stderr.trim() || "its output ended early"}`);
  const more = async () => {
    const next = await chunks.next();
    if (next.done) throw failed();
    pending = pending.length === 0 ? next.value : Buffer.concat([pending, next.value]);
  };
  /** The next `size` bytes and the newline after them, gathered once (never a copy per chunk). */
  const take = async (size: number): Promise<Buffer> => {
    const parts: Buffer[] = [];
    let need = size + 1;
    for (;;) {
      if (pending.length >= need) {
        parts.push(pending.subarray(0, need));
        pending = pending.subarray(need);
        return Buffer.concat(parts).subarray(0, size);
      }
      parts.push(pending);
      need -= pending.length;
      pending = Buffer.alloc(0);
      await more();
    }
  };
  try {
    await spawned;
    for (let i = 0; i < ids.length; i++) {
      let end: number;
      while ((end = pending.indexOf(10)) < 0) await more();
      const header = pending.subarray(0, end).toString("utf8");
      pending = pending.subarray(end + 1);
      if (header.endsWith(" missing") || header.endsWith(" ambiguous")) {
        yield null;
        continue;
      }
      yield await take(Number(header.split(" ")[2]));
    }
  } finally {
    if (child.exitCode === null) child.kill();
  }
}

/**
 * A checkout an agent works in, seen through the runner's own git directory: the agent may rewrite
 * the checkout's `.git` (hooks, configuration, a `.git` file pointing elsewhere), the runner never
 * reads it. Git finds the work tree's files as data; filters, diff and merge drivers can only come
 * from the runner's git directory's configuration, which the agent does not write.
 */
export interface Checkout {
  workTree: string;
  gitDir: string;
}

export interface CheckoutGit extends Checkout {
  git(args: string[], input?: string, env?: NodeJS.ProcessEnv): Promise<string>;
  raw(args: string[], input?: string, env?: NodeJS.ProcessEnv): Promise<GitResult>;
  /** Objects' contents, streamed (see streamBlobs). */
  blobs(ids: readonly string[]): AsyncGenerator<Buffer | null>;
}

export function inCheckout(checkout: Checkout): CheckoutGit {
  const where = [
    // The directory may belong to another user (sealed, below): it is the runner's own, by path.
    "-c",
    `safe.directory=${checkout.gitDir}`,
    `--git-dir=${checkout.gitDir}`,
    `--work-tree=${checkout.workTree}`,
  ];
  const raw = async (args: string[], input?: string, env?: NodeJS.ProcessEnv) => {
    restorePinned(checkout.gitDir);
    return gitRaw(
      checkout.workTree,
      [...where, ...(await withoutDrivers(checkout.workTree, where)), ...args],
      input,
      env,
    );
  };
  return {
    ...checkout,
    git: async (args, input, env) => ok(args, await raw(args, input, env)),
    raw,
    blobs: (ids) => {
      restorePinned(checkout.gitDir);
      return streamBlobs(checkout.workTree, ids, where);
    },
  };
}

/** Driver commands git could run for a path's attributes (a tree's .gitattributes is the agent's). */
const DRIVER_COMMANDS = "^(filter|diff|merge)\\..+\\.(clean|smudge|process|driver|textconv|command)$";

/**
 * Options that empty every filter, diff and merge driver command the repository's configuration
 * names: locally, an agent can write that configuration (its worktree's repository is the user's), and
 * the attributes that select a driver come with the tree it wrote. Git then runs none of them: a
 * filter is skipped, and a merge that would need a driver fails instead of running it.
 */
export async function withoutDrivers(cwd: string, where: string[] = []): Promise<string[]> {
  const listed = await gitRaw(cwd, [...where, "config", "--name-only", "--get-regexp", DRIVER_COMMANDS]);
  return listed.stdout
    .split("\n")
    .filter(Boolean)
    .flatMap((key) => ["-c", `${key}=`]);
}

/**
 * The runner's git directories whose configuration is pinned, with that configuration as the runner
 * wrote it (in this process's memory, where no agent reaches).
 */
const pinned = new Map<string, string>();

/**
 * What of a git directory git reads besides its objects and refs, and could make it run a program or
 * send the push elsewhere: its configuration (`include.path`, `commit.gpgSign` with `gpg.program`,
 * `remote.origin.url`, `url.*.insteadOf`, `http.proxy`, `core.sshCommand`...), hooks, attributes, and
 * files that point it at other directories.
 */
const GIT_DIR_EXTRAS = [
  "hooks",
  "info",
  "commondir",
  "config.worktree",
  "objects/info/alternates",
  "objects/info/http-alternates",
];

/**
 * Pins the runner's git directory before an agent starts: where the agent runs as the runner's own
 * user (no job container seals the directory), it could rewrite it, and options on the command line
 * cannot undo every setting (`include.path`, `url.*.insteadOf`, `remote.origin.url` have no off
 * switch). From then on, before each of the runner's commands there, the configuration is put back as
 * the runner wrote it and hooks, attributes and pointers elsewhere are removed. The first pin holds: a
 * later call (after an agent ran) changes nothing.
 */
export function pinGitDir(gitDir: string): void {
  if (pinned.has(gitDir)) return;
  pinned.set(gitDir, readFileSync(join(gitDir, "config"), "utf8"));
}

function restorePinned(gitDir: string): void {
  const config = pinned.get(gitDir);
  if (config === undefined) return;
  for (const extra of GIT_DIR_EXTRAS) rmSync(join(gitDir, extra), { recursive: true, force: true });
  // Removed first: a symbolic link the agent put there is replaced, not followed.
  rmSync(join(gitDir, "config"), { recursive: true, force: true });
  writeFileSync(join(gitDir, "config"), config, { flag: "wx" });
}

/**
 * Seals the runner's git directory before an agent starts, where the runner is root (a job
 * container): it and everything in it belong to root and are writable by no one else, so the agent,
 * which runs as a user of its own (agent-user.ts), can read it (its own repository borrows these
 * objects) but not change its hooks, configuration or the objects the output checks compare with.
 * Elsewhere (the agent runs as the runner's own user) nothing changes: hooks and configuration are
 * still ignored, by the options above, and the configuration is pinned.
 */
export function sealGitDir(gitDir: string): boolean {
  pinGitDir(gitDir);
  if (process.getuid?.() !== 0) return false;
  const seal = (path: string) => {
    const stat = lstatSync(path);
    if (stat.isSymbolicLink()) return;
    if (stat.uid !== 0 || stat.gid !== 0) chownSync(path, 0, 0);
    // Readable by the agent's user, writable by root alone.
    const mode = (stat.mode & 0o7777 & ~0o022) | (stat.isDirectory() ? 0o555 : 0o444);
    if ((stat.mode & 0o7777) !== mode) chmodSync(path, mode);
    if (stat.isDirectory()) for (const entry of readdirSync(path)) seal(join(path, entry));
  };
  seal(gitDir);
  return true;
}
