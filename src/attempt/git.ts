/**
 * Runs git with an argument vector (never a shell string: ids and branch names never meet a shell).
 */
import { execFile } from "node:child_process";

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

export function gitRaw(
  cwd: string,
  args: string[],
  input?: string,
  env: NodeJS.ProcessEnv = {},
): Promise<GitResult> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      "git",
      args,
      { cwd, env: { ...process.env, ...IDENTITY, ...env }, maxBuffer: 256 * 1024 * 1024 },
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
      ["cat-file", "--batch"],
      {
        cwd,
        env: process.env,
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
