/**
 * Which GitHub repository a checkout belongs to, and the token to read it with: what `doctor` reads
 * a repository's settings through, and `init` too when it checks the repository it just set up.
 */
import { execFileSync } from "node:child_process";
import { UsageError } from "../io.ts";

const run = (command: string, args: string[], cwd?: string, env?: NodeJS.ProcessEnv): string | null => {
  try {
    return execFileSync(command, args, {
      cwd,
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
      timeout: 10_000,
      ...(env ? { env } : {}),
    }).trim();
  } catch {
    return null;
  }
};

/** `owner/name` of a GitHub remote URL (https or ssh), or null. */
export function githubRepository(url: string): string | null {
  const m = /github\.com[/:]([A-Za-z0-9-]+)\/([A-Za-z0-9_.-]+?)(?:\.git)?\/?$/.exec(url.trim());
  return m ? `${m[1]}/${m[2]}` : null;
}

/** The repository's GitHub name from its `origin` remote, or null. */
export function remoteRepository(dir: string): string | null {
  const url = run("git", ["-C", dir, "remote", "get-url", "origin"]);
  return url ? githubRepository(url) : null;
}

/** The top folder of the git checkout `dir` is in, or null outside one. */
export function checkoutRoot(dir: string): string | null {
  return run("git", ["-C", dir, "rev-parse", "--show-toplevel"]);
}

/** The branch the checkout is on (what doctor takes for the default branch offline), or null. */
export function checkoutBranch(dir: string): string | null {
  return run("git", ["-C", dir, "symbolic-ref", "--short", "HEAD"]);
}

/**
 * What `gh auth token` is given of the environment: where to find gh and its configuration (PATH, the
 * home and config folders on Linux, macOS and Windows, GH_CONFIG_DIR, GH_HOST), and what reaches the
 * system keyring it may keep the token in (the D-Bus session, the user): nothing else, so that no
 * credential of the caller's (an Anthropic key, a cloud token) reaches another program.
 */
const GH_NEEDS = [
  "PATH",
  "HOME",
  "USER",
  "LOGNAME",
  "XDG_CONFIG_HOME",
  "XDG_DATA_HOME",
  "XDG_STATE_HOME",
  "XDG_RUNTIME_DIR",
  "DBUS_SESSION_BUS_ADDRESS",
  "GH_CONFIG_DIR",
  "GH_HOST",
  "USERPROFILE",
  "APPDATA",
  "LOCALAPPDATA",
  "SystemRoot",
  "TMPDIR",
  "TEMP",
  "TMP",
];

export const ghEnvironment = (env: NodeJS.ProcessEnv): NodeJS.ProcessEnv =>
  Object.fromEntries(GH_NEEDS.flatMap((name) => (env[name] === undefined ? [] : [[name, env[name]]])));

/** A token to read the repository with: GITHUB_TOKEN, GH_TOKEN, or the GitHub CLI's; null when none. */
export function gitHubToken(env: NodeJS.ProcessEnv): string | null {
  return (
    env.GITHUB_TOKEN || env.GH_TOKEN || run("gh", ["auth", "token"], undefined, ghEnvironment(env)) || null
  );
}

/**
 * The repository a command reads (`--repo`, else the checkout's origin remote) and the token it reads
 * with; what is missing is refused in one line that says what to give.
 */
export function repositoryAndToken(
  options: { repo?: string | undefined; dir?: string | undefined },
  env: NodeJS.ProcessEnv,
  refuse: (line: string) => Error,
  noToken: string,
): { dir: string; repository: string; token: string } {
  if (options.repo !== undefined && !/^[A-Za-z0-9-]+\/[A-Za-z0-9_.-]+$/.test(options.repo))
    throw new UsageError(`--repo expects OWNER/NAME, got '${options.repo}'`);
  const dir = options.dir ?? env.INIT_CWD ?? process.cwd();
  const repository = options.repo ?? remoteRepository(dir);
  if (!repository) throw refuse(`${dir} has no GitHub remote named origin: pass --repo OWNER/NAME`);
  const token = gitHubToken(env);
  if (!token) throw refuse(noToken);
  return { dir, repository, token };
}
