/**
 * What a repair added may change the verdict rather than the code: a new test file that ends the
 * runner early (`process.exit(0)` in `tests/aaa.test.js`, a Go `TestMain` that exits), a module that
 * shadows the one the runner loads. No name tells such a file from a new module or a new test, so its
 * effect is measured: the merged tree with only the repair's new files (none of its edits) goes
 * through the gates once. Failing there as before, the new files did not decide the verdict; passing,
 * they did, and a person decides whether that holds. One more gate run, only for a repair that adds.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type GateAnswer, judgeGates } from "./gate-verdicts.ts";
import type { CheckoutGit } from "./git.ts";
import { changesOf } from "./output-checks.ts";

/**
 * With the merged tree `merged` failing its gates and the repair's tree `repaired` checked out (and in
 * the index): the line that says its new files alone make the gates pass, or null. The working tree
 * and the index are put back to `repaired` after.
 */
export async function addedAloneDecide(
  checkout: CheckoutGit,
  merged: string,
  repaired: string,
  gates: readonly string[],
  gate: (command: string) => Promise<GateAnswer>,
): Promise<string | null> {
  const added = (await changesOf(checkout, [merged, repaired])).filter((c) => c.status === "A");
  if (added.length === 0) return null;
  const dir = mkdtempSync(join(tmpdir(), "agentrelay-added-"));
  let alone: string;
  try {
    const env = { GIT_INDEX_FILE: join(dir, "index") };
    await checkout.git(["read-tree", merged], undefined, env);
    const entries = added.map((c) => `${c.newMode} ${c.newId}\t${c.path}`).join("\0");
    await checkout.git(["update-index", "-z", "--add", "--index-info"], `${entries}\0`, env);
    alone = await checkout.git(["write-tree"], undefined, env);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  await checkout.git(["read-tree", "-u", "--reset", alone]);
  const judged = await judgeGates(gates, gate, 0).finally(() =>
    checkout.git(["read-tree", "-u", "--reset", repaired]),
  );
  if (judged.verdict !== "pass") return null;
  const files = added.map((c) => c.path);
  return `the files it added (${files.slice(0, 5).join(", ")}${files.length > 5 ? ", ..." : ""}) make the failing gates pass on their own, without its other changes`;
}
