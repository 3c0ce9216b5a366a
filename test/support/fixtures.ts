/** Access to ../shared/fixtures (real files written for agentrelay and cyberian), when present. */
import { existsSync, readdirSync, statSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { REPO_ROOT } from "../../harness/paths.ts";

export { REPO_ROOT };
/** The real files agentrelay and cyberian were written for: beside the repository, or where AGENTRELAY_FIXTURES says. */
export const FIXTURES = process.env.AGENTRELAY_FIXTURES ?? resolve(REPO_ROOT, "../shared/fixtures");
export const hasFixtures = existsSync(FIXTURES);

export function fixture(...parts: string[]): string {
  return join(FIXTURES, ...parts);
}

/** All `*.yaml` files under a fixtures folder, as paths relative to that folder, sorted. */
export function yamlFiles(...parts: string[]): string[] {
  const base = fixture(...parts);
  if (!existsSync(base)) return [];
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (name.endsWith(".yaml")) out.push(relative(base, path));
    }
  };
  walk(base);
  return out.sort();
}
