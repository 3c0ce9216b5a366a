/**
 * Runs git with an argument vector (never a shell string: ids and branch names never meet a shell).
 *
 * Every git the runner starts runs clean: an environment with nothing but what git needs (no token,
 * no Anthropic credential, no ACTIONS_* or OIDC variable: a caller adds its token for a fetch or a push
 * only), no system or global configuration, a home of its own, and options that switch off what a
 * repository's own configuration could make git run (hooks, fsmonitor, credential helpers, signing,
 * automatic gc). A repository an agent wrote can still name filters and drivers in its configuration:
 * what the runner does after an agent ran, it does in a git directory of its own (runner-git.ts).
 */
import { execFile } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

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

/** Command-line configuration (the highest precedence) that turns off what could run a command. */
export const NEUTRAL_CONFIG: readonly string[] = [
  "core.hooksPath=/dev/null",
  "core.fsmonitor=false",
  "core.attributesFile=/dev/null",
  // An empty value clears the list of helpers (git-credential(1)).
  "credential.helper=",
  "core.askPass=",
  "commit.gpgSign=false",
  "tag.gpgSign=false",
  "gc.auto=0",
  "maintenance.auto=false",
  "protocol.ext.allow=never",
  "core.pager=cat",
].flatMap((setting) => ["-c", setting]);

let home: string | null = null;
/** An empty home of the runner's, so that git finds no file of anyone's there. */
function gitHome(): string {
  home ??= mkdtempSync(join(tmpdir(), "agentrelay-git-home-"));
  return home;
}

/** The whole environment of a git the runner starts: `extra` is the caller's (a token, a git dir). */
export function gitEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH ?? "/usr/local/bin:/usr/bin:/bin",
    HOME: gitHome(),
    LC_ALL: "C",
    GIT_CONFIG_NOSYSTEM: "1",
    GIT_CONFIG_GLOBAL: "/dev/null",
    GIT_TERMINAL_PROMPT: "0",
    ...IDENTITY,
    ...extra,
  };
}

export function gitRaw(
  cwd: string,
  args: string[],
  input?: string,
  env: NodeJS.ProcessEnv = {},
): Promise<GitResult> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      "git",
      [...NEUTRAL_CONFIG, ...args],
      { cwd, env: gitEnv(env), maxBuffer: 256 * 1024 * 1024 },
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
  const result = await gitRaw(cwd, args, input, env);
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
      "git",
      [...NEUTRAL_CONFIG, "cat-file", "--batch"],
      {
        cwd,
        env: gitEnv(),
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
