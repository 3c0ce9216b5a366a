/**
 * Paths an attempt must not change unless its task's tagged_paths name them (output-checks.ts), and,
 * among them, the agent configuration the runner restores from the default branch for every attempt
 * and every resolution: one list, which both read.
 *
 * The agent configuration is what Claude Code reads from a repository as configuration or memory
 * (https://code.claude.com/docs/en/memory, /settings, /mcp, /skills), in every directory, since it
 * reads those above its working directory at start and those below as it works there:
 * - `CLAUDE.md` and `CLAUDE.local.md`;
 * - `AGENTS.md`, which Claude Code reads since 2.1.277 in a directory with no `CLAUDE.md`;
 * - `.claude` (a directory, or whatever stands in its place: a link, a submodule): settings.json and
 *   settings.local.json (hooks, permissions, environment, helper commands), CLAUDE.md, rules/,
 *   commands/, agents/, skills/, hooks/, output-styles/...;
 * - `.mcp.json` (the servers Claude Code starts; it reads each one from the project's root down to
 *   the directory it works in).
 * GitHub's: `.github/` at the root (workflows, CODEOWNERS, ...) and a CODEOWNERS file where GitHub
 * reads one, the root, `.github/` and `docs/`; one anywhere else (a test fixture) is a plain file
 * (https://docs.github.com/en/repositories/managing-your-repositorys-settings-and-features/customizing-your-repository/about-code-owners#codeowners-file-location).
 * agentrelay's: `.workflow/`, the graphs.
 *
 * GitHub reads these names as written (a git path is case-sensitive), but a checkout on a
 * case-insensitive file system (macOS and Windows by default) opens `.Claude/settings.json` for
 * `.claude/settings.json` and writes `.GitHub/workflows/x.yml` into `.github/`: names are compared as
 * such a system folds them (case, trailing dots and spaces, the code points HFS+ ignores).
 */
import type { CheckoutGit } from "./git.ts";

/** Code points HFS+ ignores in a name (as git's own check of `.git` lists them). */
const IGNORED = /[\u200c-\u200f\u202a-\u202e\u206a-\u206f\ufeff]/g;

/** A name as a case-insensitive file system sees it. */
function folded(name: string): string {
  return name
    .normalize("NFC")
    .replace(IGNORED, "")
    .toLowerCase()
    .replace(/[. ]+$/, "");
}

const AGENT_DIRECTORIES = new Set([".claude"]);
const AGENT_FILES = new Set(["claude.md", "claude.local.md", "agents.md", ".mcp.json"]);
const ROOT_DIRECTORIES = new Set([".github", ".workflow"]);
/**
 * GitHub reads a CODEOWNERS file by its exact name (its repositories are case-sensitive, and a checkout
 * on a case-insensitive file system keeps the name git has), so a `codeowners` of any other case is a
 * plain file (`.github/` is protected whole, above).
 */
const CODEOWNERS = new Set(["CODEOWNERS", "docs/CODEOWNERS"]);

/** True for a path Claude Code reads as configuration or memory (above). */
export function isAgentConfig(path: string): boolean {
  const names = path.split("/").map(folded);
  return names.some((n) => AGENT_DIRECTORIES.has(n)) || AGENT_FILES.has(names.at(-1)!);
}

/** True for a path an attempt must not change unless its task names it (above). */
export function isProtected(path: string): boolean {
  const names = path.split("/").map(folded);
  return isAgentConfig(path) || ROOT_DIRECTORIES.has(names[0]!) || CODEOWNERS.has(path);
}

type Git = Pick<CheckoutGit, "git" | "raw">;

/** The agent configuration `source` holds (a commit; the index when null), as paths. */
async function agentConfigIn(repo: Git, source: string | null): Promise<Set<string>> {
  const listed = source
    ? await repo.raw(["ls-tree", "-r", "-z", "--full-tree", "--name-only", source])
    : await repo.raw(["ls-files", "-z"]);
  return new Set(listed.stdout.split("\0").filter((path) => path && isAgentConfig(path)));
}

/** Runs `git restore` (with `options`) on `paths`, taken literally, given on its input. */
async function restore(repo: Git, options: string[], paths: Iterable<string>): Promise<void> {
  const list = [...paths];
  if (list.length === 0) return;
  const args = [
    "--literal-pathspecs",
    "restore",
    ...options,
    "--pathspec-from-file=-",
    "--pathspec-file-nul",
  ];
  await repo.git(args, list.join("\0"));
}

/**
 * Makes the index and the work tree hold the agent configuration of `from` (the default branch): every
 * such path of the checkout's commit is replaced by `from`'s, or removed where `from` has none. Git
 * writes the files, so a link in the way is replaced, never followed.
 */
export async function restoreAgentConfig(repo: Git, from: string): Promise<void> {
  const paths = new Set([...(await agentConfigIn(repo, from)), ...(await agentConfigIn(repo, null))]);
  await restore(repo, [`--source=${from}`, "--staged", "--worktree"], paths);
}

/**
 * For a merge in progress: `swap()` puts `from`'s agent configuration in the work tree only (the index
 * keeps what the merge made), and `back()` puts the index's back; paths under `keep` (the conflicted
 * files, the agent's to resolve) are left alone.
 */
export async function agentConfigSwap(
  repo: Git,
  from: string,
  keep: readonly string[],
): Promise<{ swap(): Promise<void>; back(): Promise<void> }> {
  const kept = (path: string) => keep.some((k) => path === k || path.startsWith(`${k}/`));
  const inFrom = [...(await agentConfigIn(repo, from))].filter((p) => !kept(p));
  const inIndex = [...(await agentConfigIn(repo, null))].filter((p) => !kept(p));
  const onlyInFrom = inFrom.filter((p) => !inIndex.includes(p));
  return {
    swap: () => restore(repo, [`--source=${from}`, "--worktree"], new Set([...inFrom, ...inIndex])),
    back: async () => {
      await restore(repo, ["--worktree"], inIndex);
      // What only `from` had is untracked now: removed by git, which follows no link on the way.
      if (onlyInFrom.length > 0)
        await repo.git(["--literal-pathspecs", "clean", "-f", "-d", "-x", "-q", "--", ...onlyInFrom]);
    },
  };
}
