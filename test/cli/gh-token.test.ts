/**
 * doctor's (and init's) token from the GitHub CLI: `gh auth token` gets only what it needs of the
 * environment (where gh and its configuration are, the keyring's session), never the caller's other
 * credentials. A stand-in `gh` records what it was given.
 */
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { gitHubToken } from "../../src/cli/commands/github-remote.ts";

describe("the GitHub CLI's token", () => {
  it("is asked with only the environment gh needs", () => {
    const bin = mkdtempSync(join(tmpdir(), "agentrelay-gh-"));
    writeFileSync(
      join(bin, "gh"),
      `#!/bin/sh\nenv | cut -d= -f1 | sort > ${bin}/seen\n[ "$*" = "auth token" ] && echo gho_from_gh\n`,
      { mode: 0o755 },
    );
    const env = {
      PATH: `${bin}:/usr/bin:/bin`,
      HOME: "/home/someone",
      GH_CONFIG_DIR: "/home/someone/.config/gh",
      DBUS_SESSION_BUS_ADDRESS: "unix:path=/run/user/1000/bus",
      ANTHROPIC_API_KEY: "sk-ant-api03-not-for-gh",
      AWS_SECRET_ACCESS_KEY: "not-for-gh",
      NPM_TOKEN: "not-for-gh",
    };
    expect(gitHubToken(env)).toBe("gho_from_gh");
    const seen = readFileSync(join(bin, "seen"), "utf8").trim().split("\n");
    // What a shell adds by itself (PWD, SHLVL, _) aside, gh saw exactly what it needs.
    const given = seen.filter((name) => !["PWD", "SHLVL", "_", "OLDPWD"].includes(name));
    expect(given.sort()).toEqual(["DBUS_SESSION_BUS_ADDRESS", "GH_CONFIG_DIR", "HOME", "PATH"]);
  });

  it("is not asked when GITHUB_TOKEN or GH_TOKEN is set", () => {
    expect(gitHubToken({ GITHUB_TOKEN: "ghp_a", PATH: "/nonexistent" })).toBe("ghp_a");
    expect(gitHubToken({ GH_TOKEN: "ghp_b", PATH: "/nonexistent" })).toBe("ghp_b");
    expect(gitHubToken({ PATH: "/nonexistent" })).toBeNull();
  });
});
