/**
 * A resolution attempt: the integration branch (checked out in `repoDir`) takes its target by a
 * merge, never a rebase. A clean merge needs no agent. Otherwise Claude Code resolves the conflicted
 * files, told what each side meant to do; the runner checks that no conflict marker is left, runs the
 * workstream's gates, and commits the merge. Anything short of that aborts the merge: the branch is
 * left as it was, and the attempt fails with the reason.
 */
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { git, gitRaw } from "./git.ts";
import {
  attemptStart,
  pointCheckoutAt,
  type RunnerRepo,
  stageWorkTree,
  withRunnerRepo,
} from "./runner-git.ts";

export interface ResolutionInputs {
  /** The branch merged in (the integration PR's target). */
  target: string;
  /** What each side intended: the workstream's tasks and what landed on the target meanwhile. */
  intents: string;
  /** The gates the merged result must pass (plan/resolution.ts). */
  gates: string[];
  /**
   * Agent configuration (`.claude`, ...) the agent runs with, from `from` rather than either side: in
   * the working tree only while the agent runs, so the merge commit keeps what the merge made of it.
   */
  agentConfig?: { from: string; paths: string[] };
}

export interface ResolutionOutcome {
  ok: boolean;
  reason: string | null;
  commit: string | null;
  /** Conflicted files, as the merge found them. */
  files: string[];
}

/** The prompt of a resolution: which branches, which files, what each side meant. */
export function resolutionPrompt(branch: string, resolution: ResolutionInputs, files: string[]): string {
  return [
    `Resolve the merge conflicts: \`${resolution.target}\` is being merged into \`${branch}\` (checked out here), and git stopped on conflicts.`,
    "",
    "Conflicted files:",
    ...files.map((f) => `- \`${f}\``),
    "",
    "What each side meant to do:",
    resolution.intents,
    "",
    "Edit each conflicted file so that it keeps what both sides meant, and remove every conflict marker",
    "(`<<<<<<<`, `=======`, `>>>>>>>`). Do not commit, rebase, reset or switch branches: the runner checks",
    "the files, runs the gates and commits the merge.",
  ].join("\n");
}

const MARKER = /^(<{7}|>{7})( |$)/m;

/**
 * Merges the target into the checked-out branch; `agent` resolves what conflicts, `gate` runs each
 * gate (returning its failure, or null).
 */
export async function resolveConflicts(
  repoDir: string,
  resolution: ResolutionInputs,
  agent: (prompt: string) => Promise<string | null>,
  gate: (command: string) => Promise<string | null>,
): Promise<ResolutionOutcome> {
  const branch = await git(repoDir, ["rev-parse", "--abbrev-ref", "HEAD"]);
  const merge = await gitRaw(repoDir, ["merge", "--no-ff", "--no-edit", "--no-verify", resolution.target]);
  if (merge.code === 0)
    return { ok: true, reason: null, commit: await git(repoDir, ["rev-parse", "HEAD"]), files: [] };
  const files = (await git(repoDir, ["diff", "--name-only", "--diff-filter=U"])).split("\n").filter(Boolean);
  const fail = async (reason: string): Promise<ResolutionOutcome> => {
    await gitRaw(repoDir, ["merge", "--abort"]);
    return { ok: false, reason, commit: null, files };
  };
  if (files.length === 0)
    return fail(
      `merging ${resolution.target} failed: ${`${merge.stdout}${merge.stderr}`.trim().split("\n").pop()}`,
    );
  // Captured before the agent runs: after it, the runner reads nothing of the checkout's .git and runs
  // no git there but ref and index writes (runner-git.ts).
  const start = await attemptStart(repoDir, "HEAD", false);
  const target = await git(repoDir, ["rev-parse", "--verify", `${resolution.target}^{commit}`]);
  const merged = (await git(repoDir, ["ls-files", "-s", "-z"])).split("\0").filter((e) => / 0\t/.test(e));
  const message = mergeMessage(
    readFileSync(
      await git(repoDir, ["rev-parse", "--path-format=absolute", "--git-path", "MERGE_MSG"]),
      "utf8",
    ),
    resolution.target,
    branch,
  );
  const config = resolution.agentConfig;
  // A configuration file that itself conflicts is the agent's to resolve, like any other.
  const configPaths = (config?.paths ?? []).filter(
    (p) => !files.some((f) => f === p || f.startsWith(`${p}/`)),
  );
  /** The runner's index: what the merge resolved by itself, and the conflicted files as they are on disk. */
  const indexOfMerge = async (repo: RunnerRepo) => {
    await repo.run(["read-tree", "--empty"]);
    if (merged.length > 0) await repo.run(["update-index", "-z", "--index-info"], `${merged.join("\0")}\0`);
  };
  /** After the agent: each config path back as the merge left it, written by the runner's git. */
  const restoreConfig = () =>
    withRunnerRepo(start.objects, repoDir, async (repo) => {
      await indexOfMerge(repo);
      for (const path of configPaths) {
        rmSync(join(repoDir, path), { recursive: true, force: true });
        const listed = await repo.run(["ls-files", "-z", "--", path]);
        if (listed) await repo.run(["checkout-index", "-f", "-z", "--stdin"], listed);
      }
    });
  /** Back where the branch was, without the agent's repository: its files by the runner's git. */
  const abandon = async (reason: string): Promise<ResolutionOutcome> => {
    await withRunnerRepo(start.objects, repoDir, async (repo) => {
      await stageWorkTree(repo, start.head);
      await repo.run(["read-tree", "-u", "--reset", start.head]);
    });
    await git(repoDir, ["merge", "--quit"]);
    await pointCheckoutAt(repoDir, start, start.head);
    return { ok: false, reason, commit: null, files };
  };
  if (config) {
    for (const path of configPaths) {
      rmSync(join(repoDir, path), { recursive: true, force: true });
      if (await git(repoDir, ["ls-tree", "--name-only", config.from, "--", path]))
        await git(repoDir, ["restore", "--worktree", `--source=${config.from}`, "--", path]);
    }
  }
  const failure = await agent(resolutionPrompt(branch, resolution, files)).finally(restoreConfig);
  if (failure) return abandon(failure);
  const left = files.filter((f) => MARKER.test(readFileSync(join(repoDir, f), "utf8")));
  if (left.length > 0) return abandon(`conflict markers are left in ${left.join(", ")}`);
  for (const command of resolution.gates) {
    const failed = await gate(command);
    if (failed) return abandon(failed);
  }
  const commit = await withRunnerRepo(start.objects, repoDir, async (repo) => {
    await indexOfMerge(repo);
    await repo.run(["add", "--", ...files]);
    const tree = await repo.run(["write-tree"]);
    return repo.run(["commit-tree", tree, "-p", start.head, "-p", target, "-m", message]);
  });
  await git(repoDir, ["merge", "--quit"]);
  await pointCheckoutAt(repoDir, start, commit);
  return { ok: true, reason: null, commit, files };
}

/** The merge commit's message as `git merge --no-edit` would write it (MERGE_MSG without comments). */
function mergeMessage(text: string, target: string, branch: string): string {
  const kept = text
    .split("\n")
    .filter((line) => !line.startsWith("#"))
    .join("\n")
    .trim();
  return kept || `Merge ${target} into ${branch}`;
}
