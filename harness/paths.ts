/** Where the repository is: the nearest folder with a package.json (from harness/, or lib/ when bundled). */
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";

export const REPO_ROOT = ((dir: string): string => {
  while (!existsSync(join(dir, "package.json"))) dir = dirname(dir);
  return dir;
})(import.meta.dirname);
