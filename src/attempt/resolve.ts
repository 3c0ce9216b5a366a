/**
 * A resolution attempt: the integration branch (checked out in `repoDir`) takes its target by a
 * merge, never a rebase. A clean merge needs no agent. Otherwise Claude Code resolves the conflicted
 * files, told what each side meant to do; the runner checks that no conflict marker is left, runs the
 * workstream's gates, and commits the merge. Anything short of that aborts the merge: the branch is
 * left as it was, and the attempt fails with the reason.
 */
import { rmSync } from "node:fs";
import { readAgentFile } from "./agent-files.ts";
import { join } from "node:path";
import type { CheckoutGit } from "./git.ts";
import { secretsIn } from "./output-checks.ts";

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
  checkout: CheckoutGit,
  resolution: ResolutionInputs,
  agent: (prompt: string) => Promise<string | null>,
  gate: (command: string) => Promise<string | null>,
): Promise<ResolutionOutcome> {
  const { workTree: repoDir, git: inRepo, raw } = checkout;
  const branch = await inRepo(["rev-parse", "--abbrev-ref", "HEAD"]);
  const merge = await raw(["merge", "--no-ff", "--no-edit", "--no-verify", resolution.target]);
  if (merge.code === 0)
    return { ok: true, reason: null, commit: await inRepo(["rev-parse", "HEAD"]), files: [] };
  const files = (await inRepo(["diff", "--name-only", "--diff-filter=U"])).split("\n").filter(Boolean);
  const fail = async (reason: string): Promise<ResolutionOutcome> => {
    await raw(["merge", "--abort"]);
    return { ok: false, reason, commit: null, files };
  };
  if (files.length === 0)
    return fail(
      `merging ${resolution.target} failed: ${`${merge.stdout}${merge.stderr}`.trim().split("\n").pop()}`,
    );
  const config = resolution.agentConfig;
  // A configuration file that itself conflicts is the agent's to resolve, like any other.
  const configPaths = (config?.paths ?? []).filter(
    (p) => !files.some((f) => f === p || f.startsWith(`${p}/`)),
  );
  /** Each config path as `source` has it (a commit; the index when null), or absent where it has none. */
  const configure = async (source: string | null) => {
    for (const path of configPaths) {
      rmSync(join(repoDir, path), { recursive: true, force: true });
      const listed = source
        ? await inRepo(["ls-tree", "--name-only", source, "--", path])
        : await inRepo(["ls-files", "--", path]);
      if (listed)
        await inRepo(["restore", "--worktree", ...(source ? [`--source=${source}`] : []), "--", path]);
    }
  };
  if (config) await configure(config.from);
  const failure = await agent(resolutionPrompt(branch, resolution, files)).finally(() => configure(null));
  if (failure) return fail(failure);
  // The agent's files, read as data: a link is not followed, a FIFO not waited on.
  const left = files.filter((f) => MARKER.test(readAgentFile(join(repoDir, f), 256 * 1024 * 1024) ?? ""));
  if (left.length > 0) return fail(`conflict markers are left in ${left.join(", ")}`);
  await inRepo(["add", "--", ...files]);
  if ((await inRepo(["diff", "--name-only", "--diff-filter=U"])) !== "")
    return fail("files are still unmerged");
  for (const command of resolution.gates) {
    const failed = await gate(command);
    if (failed) return fail(failed);
  }
  // What the agent wrote lands too: the lines the resolved files add to the branch are checked for
  // secrets, as an attempt's are (output-checks.ts), before anything is committed or pushed.
  const secrets = await secretsIn(
    await inRepo([
      "diff",
      "--cached",
      "--no-color",
      "--no-renames",
      "--no-ext-diff",
      "--no-textconv",
      "-U0",
      "HEAD",
      "--",
      ...files,
    ]),
  );
  if (secrets.length > 0) return fail(`the output checks blocked the push: ${secrets.join("; ")}`);
  await inRepo(["commit", "-q", "--no-edit", "--no-verify"]);
  return { ok: true, reason: null, commit: await inRepo(["rev-parse", "HEAD"]), files };
}
