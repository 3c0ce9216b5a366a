/**
 * A resolution attempt: the integration branch (checked out in `repoDir`) takes its target by a
 * merge, never a rebase. A clean merge needs no agent. Otherwise Claude Code resolves the conflicted
 * files, told what each side meant to do; the runner checks that no conflict marker is left, runs the
 * workstream's gates, and commits the merge. Anything short of that aborts the merge: the branch is
 * left as it was, and the attempt fails with the reason.
 */
import { readAgentFile } from "./agent-files.ts";
import { join } from "node:path";
import type { CheckoutGit } from "./git.ts";
import { changesOf, secretsInChanges } from "./output-checks.ts";
import { agentConfigSwap } from "./protected-paths.ts";
import { type GateAnswer, judgeGates } from "./gate-verdicts.ts";
import { settleIgnored, snapshotIgnored } from "./ignored-files.ts";
import { judgesDiff, resolutionWeakens } from "./landing-guards.ts";

export interface ResolutionInputs {
  /**
   * What the job does besides resolving conflicts: verify the tree that will land (no agent), or
   * repair it (repair.ts). Absent: a resolution.
   */
  kind?: "verify" | "repair";
  /** A repair: what failed on the tree that will land (the gates' output, or the failed checks'). */
  failure?: string;
  /** The branch merged in (the integration PR's target). */
  target: string;
  /** What each side intended: the workstream's tasks and what landed on the target meanwhile. */
  intents: string;
  /** The gates the merged result must pass (plan/resolution.ts). */
  gates: string[];
  /**
   * Where the agent configuration the agent runs with comes from (protected-paths.ts: `.claude`,
   * `CLAUDE.md`, ... at any depth), rather than either side: in the working tree only while the agent
   * runs, so the merge commit keeps what the merge made of it.
   */
  agentConfig?: { from: string };
  /** Where the graph's tests are (`test_paths`; absent: the usual names, landing-guards.ts). */
  testPaths?: string[] | null;
}

/**
 * Why a landing job did not pass, told apart: a break (its gates fail every time on the same tree), a
 * flaky gate (it passed on a rerun: `ok` with this verdict), a timeout, or a change to what judges it
 * (landing-guards.ts), which goes to a person.
 */
export type LandingVerdict = "break" | "flaky" | "timed_out" | "weakened" | "workflows";

export interface ResolutionOutcome {
  ok: boolean;
  reason: string | null;
  commit: string | null;
  /** Conflicted files, as the merge found them. */
  files: string[];
  /** The target commit merged in (what the gates ran with). */
  base?: string | null;
  /** What the agent changed, in its words (a repair). */
  summary?: string | null;
  verdict?: LandingVerdict;
  /** What a person is shown: the failing gate's output, or the diff of what changed the judges. */
  output?: string | null;
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

/** Merges `target` into the checked-out branch; where that fails, the files left in conflict and git's last line. */
export async function startMerge(
  checkout: CheckoutGit,
  target: string,
): Promise<{ merged: boolean; files: string[]; why: string }> {
  const merge = await checkout.raw(["merge", "--no-ff", "--no-edit", "--no-verify", target]);
  if (merge.code === 0) return { merged: true, files: [], why: "" };
  const files = (await checkout.git(["diff", "--name-only", "--diff-filter=U"])).split("\n").filter(Boolean);
  return { merged: false, files, why: `${merge.stdout}${merge.stderr}`.trim().split("\n").pop() ?? "" };
}

/**
 * Merges the target into the checked-out branch; `agent` resolves what conflicts, `gate` runs each
 * gate (returning its failure, or null). When the resolved merge fails its gates (a break), the merge
 * is committed here, not pushed, and the outcome says `handover`: a repair takes it from there with the
 * gates' output (run-resolution.ts), so that the cause is fixed, or said, rather than the conflict.
 */
export async function resolveConflicts(
  checkout: CheckoutGit,
  resolution: ResolutionInputs,
  agent: (prompt: string) => Promise<string | null>,
  gate: (command: string) => Promise<GateAnswer>,
): Promise<ResolutionOutcome & { handover?: boolean }> {
  const { workTree: repoDir, git: inRepo, raw } = checkout;
  const branch = await inRepo(["rev-parse", "--abbrev-ref", "HEAD"]);
  const { merged, files, why } = await startMerge(checkout, resolution.target);
  if (merged) return { ok: true, reason: null, commit: await inRepo(["rev-parse", "HEAD"]), files: [] };
  const fail = async (reason: string, more: Partial<ResolutionOutcome> = {}): Promise<ResolutionOutcome> => {
    await raw(["merge", "--abort"]);
    return { ok: false, reason, commit: null, files, ...more };
  };
  if (files.length === 0) return fail(`merging ${resolution.target} failed: ${why}`);
  // A configuration file that itself conflicts is the agent's to resolve, like any other.
  const config =
    resolution.agentConfig && (await agentConfigSwap(checkout, resolution.agentConfig.from, files));
  const ignored = await snapshotIgnored(checkout);
  await config?.swap();
  const failure = await agent(resolutionPrompt(branch, resolution, files)).finally(() => config?.back());
  if (failure) return fail(failure);
  // What git ignores does not land, but the gates would run with it (ignored-files.ts).
  const hidden = await settleIgnored(checkout, ignored);
  if (hidden.length > 0)
    return fail(
      `the resolution changed what judges it (${hidden.join("; ")}): a person decides whether that holds`,
      { verdict: "weakened", output: hidden.join("\n") },
    );
  // The agent's files, read as data: a link is not followed, a FIFO not waited on.
  const left = files.filter((f) => MARKER.test(readAgentFile(join(repoDir, f), 256 * 1024 * 1024) ?? ""));
  if (left.length > 0) return fail(`conflict markers are left in ${left.join(", ")}`);
  // Only the conflicted files are the resolution's: whatever else the agent changed is put back, so
  // that the gates judge the tree that is committed (with its own tests and scripts).
  const strays = (await inRepo(["diff", "--name-only", "-z"]))
    .split("\0")
    .filter((f) => f && !files.includes(f));
  if (strays.length > 0) await inRepo(["checkout", "--", ...strays.map((f) => `:(literal)${f}`)]);
  await raw(["clean", "-q", "-f", "-d"]);
  await inRepo(["add", "--", ...files]);
  if ((await inRepo(["diff", "--name-only", "--diff-filter=U"])) !== "")
    return fail("files are still unmerged");
  // A resolution keeps what each side asserts, and the gates' commands as one side had them.
  const weakened = await resolutionWeakens(checkout, files, resolution);
  if (weakened.length > 0) {
    const output = await judgesDiff(checkout, "HEAD", await inRepo(["write-tree"]));
    return fail(
      `the resolution changed what judges it (${weakened.join("; ")}): a person decides whether that holds`,
      {
        verdict: "weakened",
        output,
      },
    );
  }
  // What the agent wrote lands too: what the resolved files add to the branch is checked for secrets,
  // read from the objects staged as an attempt's are (output-checks.ts), before anything is committed.
  const staged = await changesOf(checkout, ["--cached", "HEAD", "--", ...files.map((f) => `:(literal)${f}`)]);
  const { findings: secrets } = await secretsInChanges(checkout, staged);
  if (secrets.length > 0) return fail(`the output checks blocked the push: ${secrets.join("; ")}`);
  const tree = await inRepo(["write-tree"]);
  const judged = await judgeGates(resolution.gates, gate);
  // What the gates wrote while they ran (caches) is not the resolution's.
  await inRepo(["checkout", "-f", "--", "."]);
  await raw(["clean", "-q", "-f", "-d"]);
  if (judged.verdict === "timed_out")
    return fail(judged.reason!, { verdict: "timed_out", output: judged.output });
  const more = judged.verdict === "pass" ? {} : { verdict: judged.verdict, output: judged.output };
  if ((await inRepo(["write-tree"])) !== tree) return fail("the gates changed the staged files");
  await inRepo(["commit", "-q", "--no-edit", "--no-verify"]);
  // The merged tree is verified with the target as merged (MERGE_HEAD), when the gates passed on it.
  const base = await inRepo(["rev-parse", "HEAD^2"]);
  const commit = await inRepo(["rev-parse", "HEAD"]);
  if (judged.verdict === "break")
    return { ok: false, reason: judged.reason, commit, files, base, handover: true, ...more };
  return { ok: true, reason: null, commit, files, base, ...more };
}
