/**
 * Landing jobs whose target changed a workflow file. GitHub refuses a push whose new commits create or
 * change a file under `.github/workflows/` from a token without the `workflows` permission (a merge
 * commit that brings the target's change counts: radius-project/docs#1271), and its "update a pull
 * request branch" API refuses the same base merge (chdsbd/kodiak#853, CopilotKit/CopilotKit#4037);
 * no token of agentrelay's holds `workflows` (`GITHUB_TOKEN` never can). What GitHub takes is its own
 * merge of the PR, whose new commit changes only what the branch changed. So a landing job never pushes
 * the target's workflow change, and leaves bringing it to GitHub's merge:
 * - a verification pushes nothing (action/resolution-job.ts);
 * - a resolution merges the target only up to the commit before its first workflow change, when the
 *   conflict is already there; what it pushes must then merge cleanly with the whole target;
 * - a repair's fix goes on the branch without the merge, when the branch so fixed merges with the
 *   target into exactly the tree the gates passed on.
 * Anything else is a person's: one line says what to do.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { CheckoutGit } from "./git.ts";
import { workflowsBroughtIn } from "./workflow-files.ts";

/** What a person does when no landing here avoids the workflow change. */
export const mergeItYourself = (target: string, branch: string, file: string): string =>
  `${target} changed ${file}, and GitHub refuses a push that brings a workflow change from agentrelay's tokens (they never hold \`workflows\`): merge ${target} into ${branch} yourself and push (the run goes on by itself)`;

/**
 * When `target` changed a workflow file since it parted from `branch`: the file, and the last commit of
 * the target (first parent) before that change, which a merge may bring without it. Null when the
 * target brings no workflow change.
 */
export async function targetBeforeWorkflows(
  checkout: CheckoutGit,
  branch: string,
  target: string,
): Promise<{ upTo: string; file: string } | null> {
  const base = await checkout.git(["merge-base", branch, target]);
  if ((await workflowsBroughtIn(checkout, base, target)).length === 0) return null;
  const commits = (await checkout.git(["rev-list", "--first-parent", "--reverse", `${base}..${target}`]))
    .split("\n")
    .filter(Boolean);
  for (const commit of commits) {
    const parent = await checkout.git(["rev-parse", `${commit}^1`]);
    const [file] = await workflowsBroughtIn(checkout, parent, commit);
    if (file) return { upTo: parent, file };
  }
  // Brought by a side branch the first-parent walk does not see: no commit of the target is safe.
  const [file] = await workflowsBroughtIn(checkout, base, target);
  return { upTo: base, file: file! };
}

/** The tree of `a` and `b` merged, or null where they conflict. */
export async function mergedTree(checkout: CheckoutGit, a: string, b: string): Promise<string | null> {
  const merged = await checkout.raw(["merge-tree", "--write-tree", "--no-messages", a, b]);
  return merged.code === 0 ? merged.stdout.trim().split("\n")[0]! : null;
}

/**
 * A repair's fix without the merge: `fixed` (a commit on `merged`, the branch `before` with the target
 * merged in) put on `before` alone, when GitHub's merge of that commit with `target` makes exactly the
 * tree of `fixed`, which the gates passed on. The new commit, or null.
 */
export async function fixWithoutMerge(
  checkout: CheckoutGit,
  before: string,
  merged: string,
  fixed: string,
  target: string,
): Promise<string | null> {
  const treeOf = (commit: string) => checkout.git(["rev-parse", `${commit}^{tree}`]);
  // The fix's diff applied to the branch's tree, in an index of its own: the working tree and the
  // checkout's index are not touched. A fix whose context the target changed does not apply.
  const dir = mkdtempSync(join(tmpdir(), "agentrelay-fix-"));
  const env = { GIT_INDEX_FILE: join(dir, "index") };
  let tree: string;
  try {
    await checkout.git(["read-tree", before], undefined, env);
    const patch = await checkout.raw([
      "diff",
      "--binary",
      "--no-color",
      "--no-ext-diff",
      "--no-renames",
      merged,
      fixed,
    ]);
    if (patch.code !== 0) return null;
    // The gates passed on the merged tree as it was: the branch as it is lands it.
    if (patch.stdout === "")
      return (await mergedTree(checkout, before, target)) === (await treeOf(fixed)) ? before : null;
    const applied = await checkout.raw(["apply", "--cached", "--whitespace=nowarn", "-"], patch.stdout, env);
    if (applied.code !== 0) return null;
    tree = await checkout.git(["write-tree"], undefined, env);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const message = (await checkout.git(["log", "-1", "--format=%B", fixed])).replace(
    /^Repair /,
    "Repair (without the target's merge) ",
  );
  const commit = await checkout.git(["commit-tree", tree, "-p", before, "-F", "-"], `${message}\n`);
  const landed = await mergedTree(checkout, commit, target);
  return landed !== null && landed === (await treeOf(fixed)) ? commit : null;
}

/**
 * What a landing job pushes when its target changed a workflow file: `commit` (`before` when there is
 * nothing to push) with a line for the log, or why a person merges instead. Null: nothing it would push
 * brings a workflow change; it pushes as it is.
 */
export async function withoutWorkflows(
  checkout: CheckoutGit,
  job: {
    kind?: "verify" | "repair";
    /** The branch as pushed, and what the job made of it. */
    before: string;
    commit: string;
    /** The whole target, and where a resolution merged it up to (targetBeforeWorkflows). */
    target: string;
    beforeWorkflows: { upTo: string; file: string } | null;
    names: { target: string; branch: string };
  },
): Promise<{ commit: string; said: string } | { reason: string } | null> {
  const { target, branch } = job.names;
  if (job.beforeWorkflows) {
    // A resolution up to the target's workflow change: GitHub's merge must be able to bring the rest.
    return (await mergedTree(checkout, job.commit, job.target)) === null
      ? { reason: mergeItYourself(target, branch, job.beforeWorkflows.file) }
      : null;
  }
  const [file] = await workflowsBroughtIn(checkout, job.before, job.commit);
  if (!file) return null;
  const notMerged = `${target} changed ${file}: ${branch} is pushed without ${target} merged in (no token of agentrelay's may push a workflow change); GitHub's merge brings ${target}`;
  // A verification: the branch stays as it is, and GitHub's merge of this head into that target makes
  // the merged tree the gates passed on.
  if (job.kind === "verify") return { commit: job.before, said: notMerged };
  if (job.kind === "repair") {
    const parents = (await checkout.git(["rev-list", "--parents", "-n", "1", job.commit])).split(" ");
    // The repair's commit is on the merge, or is the merge itself when its agent changed nothing.
    const merged = parents.length > 2 ? job.commit : parents[1]!;
    const fixed = await fixWithoutMerge(checkout, job.before, merged, job.commit, job.target);
    if (fixed) return { commit: fixed, said: notMerged };
  }
  return { reason: mergeItYourself(target, branch, file) };
}
