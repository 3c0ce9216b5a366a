/**
 * Paths a workflow names (a criteria script, a provider's output file) resolved inside the checkout,
 * and refused when they would leave it: through `..`, an absolute path, or a symbolic link that the
 * agent (or an earlier task) planted in the checkout.
 */
import { existsSync, realpathSync } from "node:fs";
import { dirname, isAbsolute, relative, resolve, sep } from "node:path";

export class OutsideRepositoryError extends Error {
  override name = "OutsideRepositoryError";
}

const inside = (root: string, path: string) => {
  const rel = relative(root, path);
  return rel === "" || (!rel.startsWith(`..${sep}`) && rel !== ".." && !isAbsolute(rel));
};

/** `path` (relative to `base`, itself inside `root`) as an absolute path inside `root`; else throws. */
export function insideRepository(root: string, base: string, path: string, what: string): string {
  const target = resolve(base, path);
  if (isAbsolute(path) || !inside(root, target)) {
    throw new OutsideRepositoryError(`${what} '${path}' is outside the repository`);
  }
  if (!existsSync(root)) return target; // nothing there, so no link to follow
  // The nearest part that exists, with its links followed, must still be inside.
  let existing = target;
  while (!existsSync(existing) && dirname(existing) !== existing) existing = dirname(existing);
  if (!inside(realpathSync(root), realpathSync(existing))) {
    throw new OutsideRepositoryError(
      `${what} '${path}' leads outside the repository through a symbolic link`,
    );
  }
  return target;
}
