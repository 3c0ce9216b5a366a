/**
 * The programs the runner runs: found on the runner's own PATH and run by that absolute path, and,
 * where the agent has a user of its own, refused with one line when that user could change the file
 * or any directory above it (the sticky /tmp aside, for a file the user does not own).
 */
import { chmodSync, chownSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { checkPrograms, programPath, reachableBy } from "../../src/attempt/programs.ts";

const agent = { uid: 61_999, gid: 61_000 };
const root = process.getuid?.() === 0;

/** A program in a directory of its own, both root's and closed to writing by others. */
function program(mode = 0o755, dirMode = 0o755): { dir: string; path: string } {
  const dir = mkdtempSync(join(tmpdir(), "agentrelay-programs-"));
  chmodSync(dir, dirMode);
  const path = join(dir, "git");
  writeFileSync(path, "#!/bin/sh\n", { mode });
  chmodSync(path, mode);
  return { dir, path };
}

describe("a program the runner runs", () => {
  it("is found on the runner's own PATH, links resolved, and kept", () => {
    const path = programPath("git");
    expect(path).toMatch(/^\/.*\/git$/);
    expect(programPath("git")).toBe(path);
    expect(programPath("agentrelay-no-such-program")).toBe("agentrelay-no-such-program");
  });

  it("is out of the agent's reach when it and every directory above it are root's alone", () => {
    const { path } = program();
    expect(reachableBy(path, agent)).toBeNull();
    expect(checkPrograms([path], agent)).toBeNull();
  });

  it.skipIf(!root)(
    "is within reach when the agent's user owns it, or may write it or a directory above",
    () => {
      const owned = program();
      chownSync(owned.path, agent.uid, 0);
      expect(reachableBy(owned.path, agent)).toBe(
        `${owned.path} is writable by the agent's user (uid ${agent.uid})`,
      );
      const groupWritable = program(0o775);
      chownSync(groupWritable.path, 0, agent.gid);
      expect(reachableBy(groupWritable.path, agent)).toContain("is writable by the agent's user");
      const openDir = program(0o755, 0o777);
      expect(reachableBy(openDir.path, agent)).toBe(
        `${openDir.dir} (above ${openDir.path}) is writable by the agent's user (uid ${agent.uid})`,
      );
      // A directory further up that the agent's user owns.
      const parent = mkdtempSync(join(tmpdir(), "agentrelay-programs-parent-"));
      chmodSync(parent, 0o755);
      mkdirSync(join(parent, "bin"));
      writeFileSync(join(parent, "bin", "git"), "#!/bin/sh\n", { mode: 0o755 });
      chownSync(parent, agent.uid, agent.gid);
      expect(reachableBy(join(parent, "bin", "git"), agent)).toContain(
        `${parent} (above ${join(parent, "bin")})`,
      );
      // The runner says which program, why, and what to do, in one line.
      const line = checkPrograms([openDir.path], agent)!;
      expect(line).toBe(
        `the runner will not run ${openDir.path} where the agent can change it: ${openDir.dir} (above ${openDir.path}) is writable by the agent's user (uid ${agent.uid}); install it where only root writes (the agent image does)`,
      );
      expect(line).not.toContain("\n");
    },
  );

  it.skipIf(!root)(
    "in a sticky directory anyone writes (/tmp) is out of reach when the agent does not own it",
    () => {
      const path = join(tmpdir(), `agentrelay-sticky-${process.pid}-${Date.now()}`);
      writeFileSync(path, "#!/bin/sh\n", { mode: 0o755 });
      expect(reachableBy(path, agent)).toBeNull();
      chownSync(path, agent.uid, agent.gid);
      expect(reachableBy(path, agent)).toContain("is writable by the agent's user");
    },
  );
});
