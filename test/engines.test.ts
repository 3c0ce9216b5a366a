/**
 * The Node version the README and package.json state is one every installed package accepts: `npm ci`
 * on it warns of no unsupported engine.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import semver from "semver";
import { describe, expect, it } from "vitest";
import { REPO_ROOT } from "./support/fixtures.ts";

describe("the stated Node version", () => {
  const pkg = JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8"));
  const floor = /^>=(\d+\.\d+\.\d+)$/.exec(pkg.engines.node)![1]!;

  it("is the README's", () => {
    expect(readFileSync(join(REPO_ROOT, "README.md"), "utf8")).toContain(`Node ${floor} or newer`);
  });

  it("is accepted by every installed package", () => {
    const lock = JSON.parse(readFileSync(join(REPO_ROOT, "package-lock.json"), "utf8"));
    const refused = Object.entries(
      lock.packages as Record<string, { engines?: { node?: string }; dev?: boolean }>,
    )
      .filter(
        ([path, p]) =>
          path && typeof p.engines?.node === "string" && !semver.satisfies(floor, p.engines.node),
      )
      // The Claude Code CLI states Node 22 but ships a native binary that runs here (see the tests using it).
      .filter(([path]) => !path.endsWith("node_modules/@anthropic-ai/claude-code"))
      .map(([path, p]) => `${path} wants node ${p.engines!.node}`);
    expect(refused).toEqual([]);
  });
});
