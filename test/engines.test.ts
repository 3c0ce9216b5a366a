/**
 * The Node versions package.json states are the ones the README names and CI tests, and every
 * installed package accepts them: `npm ci` (and a user's install) warns of no unsupported engine,
 * but for the one upstream mistake named below.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { load } from "js-yaml";
import semver from "semver";
import { describe, expect, it } from "vitest";
import { REPO_ROOT } from "./support/fixtures.ts";

/**
 * Dependencies that state a newer Node than they need, by mistake, overridden in package.json with a
 * version that states what Octokit supports: content-type 3 states Node 22; @octokit/request took it
 * in a patch release (10.0.15) although Octokit supports Node 20, and is going back to content-type 2
 * (octokit/request.js#835), whose API (`parse`) is the same. Every install of this package is of this
 * repository (a clone runs the bundled command line; nobody installs it as a dependency), so the
 * override applies wherever it is installed.
 */
const OVERRIDDEN: Record<string, { dependent: string; upstream: string }> = {
  "content-type": { dependent: "@octokit/request", upstream: "octokit/request.js#835" },
};

describe("the stated Node versions", () => {
  const pkg = JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8"));
  const floor = /^>=(\d+\.\d+\.\d+)$/.exec(pkg.engines.node)![1]!;

  it("are the README's", () => {
    expect(readFileSync(join(REPO_ROOT, "README.md"), "utf8")).toContain(`Node ${floor} or newer`);
  });

  it("are what CI tests: the floor's major line and the two after it", () => {
    const ci = load(readFileSync(join(REPO_ROOT, ".github/workflows/ci.yml"), "utf8")) as {
      jobs: { test: { strategy: { matrix: { node: number[] } } } };
    };
    const major = semver.major(floor);
    expect(ci.jobs.test.strategy.matrix.node).toEqual([major, major + 2, major + 4]);
  });

  it("are accepted by every installed package", () => {
    const lock = JSON.parse(readFileSync(join(REPO_ROOT, "package-lock.json"), "utf8"));
    const refused = Object.entries(
      lock.packages as Record<string, { engines?: { node?: string }; dev?: boolean }>,
    )
      .filter(
        ([path, p]) =>
          path && typeof p.engines?.node === "string" && !semver.satisfies(floor, p.engines.node),
      )
      .map(([path]) => path);
    expect(refused).toEqual([]);
  });

  it("are kept by an override only while a dependency still asks for the version that states more", () => {
    expect(Object.keys(pkg.overrides ?? {})).toEqual(Object.keys(OVERRIDDEN));
    const lock = JSON.parse(readFileSync(join(REPO_ROOT, "package-lock.json"), "utf8"));
    for (const [name, { dependent, upstream }] of Object.entries(OVERRIDDEN)) {
      const asked = lock.packages[`node_modules/${dependent}`].dependencies[name] as string;
      // Once upstream asks for a version that states the floor, the override goes.
      expect(
        semver.intersects(asked, pkg.overrides[name]),
        `${dependent} asks for ${name}@${asked}: ${upstream} is done, drop the override`,
      ).toBe(false);
    }
  });
});
