/**
 * What an agent did to the files git ignores. They never land (what is committed is `git add --all`'s
 * tree), but the gates run in the same working tree and read them: a repair that swapped
 * `node_modules/.bin/jest` for `exit 0`, or left a new ignored setup file a runner loads, would pass its
 * gates with a tree that does not land. So before a repair's gates run, the ignored files its agent
 * added are removed (a cache is made again by whatever needs it), and one it changed or deleted that a
 * gate could run (a script, an executable, anything under a `.bin/`) goes to a person: it cannot be put
 * back. Caches and data the agent's own test runs rewrite are left alone.
 */
import { lstatSync, rmSync } from "node:fs";
import { join } from "node:path";
import type { CheckoutGit } from "./git.ts";

/** Past this many ignored files no snapshot is taken (the repository's own dependencies, at worst). */
const MAX_FILES = 500_000;
/** What a gate could run rather than read. */
const PROGRAM = /(^|\/)\.bin\/|\.(sh|bash|[cm]?js|[cm]?ts|py|rb|pl|php)$/;

/** Each ignored file's identity: inode, size, change and modification times, mode. */
export type IgnoredSnapshot = Map<string, string>;

export async function snapshotIgnored(checkout: CheckoutGit): Promise<IgnoredSnapshot | null> {
  const listed = await checkout.raw(["ls-files", "-z", "--others", "--ignored", "--exclude-standard"]);
  if (listed.code !== 0) return null;
  const paths = listed.stdout.split("\0").filter(Boolean);
  if (paths.length > MAX_FILES) return null;
  const snapshot: IgnoredSnapshot = new Map();
  for (const path of paths) {
    try {
      const s = lstatSync(join(checkout.workTree, path));
      snapshot.set(path, `${s.ino}:${s.size}:${s.ctimeMs}:${s.mtimeMs}:${s.mode}`);
    } catch {
      // Gone between the listing and the look: not there.
    }
  }
  return snapshot;
}

/**
 * After the agent: the ignored files it added are removed; the lines for those it changed or deleted
 * that a gate could run (empty when none). Null `before`: no snapshot, nothing said.
 */
export async function settleIgnored(
  checkout: CheckoutGit,
  before: IgnoredSnapshot | null,
): Promise<string[]> {
  if (!before) return [];
  const after = await snapshotIgnored(checkout);
  if (!after) return [];
  const found: string[] = [];
  for (const [path, id] of after) {
    if (!before.has(path)) rmSync(join(checkout.workTree, path), { force: true });
    else if (before.get(path) !== id && PROGRAM.test(path))
      found.push(`changed ${path}, which git ignores (it would not land, but a gate may run it)`);
  }
  for (const path of before.keys())
    if (!after.has(path) && PROGRAM.test(path))
      found.push(`deleted ${path}, which git ignores (a gate may run it)`);
  return found;
}
