/** A run started in a clone with uncommitted changes is told it starts from the last commit. */
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { uncommittedChanges } from "../../src/local/repository.ts";

const dirs: string[] = [];
afterEach(() => dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true })));

function repo(): string {
  const dir = mkdtempSync(join(tmpdir(), "agentrelay-dirty-"));
  dirs.push(dir);
  const git = (...args: string[]) => execFileSync("git", ["-C", dir, ...args], { stdio: "pipe" });
  git("init", "-q", "-b", "main");
  writeFileSync(join(dir, "calc.py"), "x = 1\n");
  git("add", "calc.py");
  git("-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "start");
  return dir;
}

describe("uncommitted changes in the clone a run starts in", () => {
  it("are found in tracked files, not in untracked ones", async () => {
    const dir = repo();
    expect(await uncommittedChanges(dir)).toBe(false);
    writeFileSync(join(dir, "notes.txt"), "mine\n"); // untracked: no task branch would have it either
    expect(await uncommittedChanges(dir)).toBe(false);
    writeFileSync(join(dir, "calc.py"), "x = 2\n");
    expect(await uncommittedChanges(dir)).toBe(true);
  });

  it("are not claimed where there is no repository", async () => {
    const dir = mkdtempSync(join(tmpdir(), "agentrelay-none-"));
    dirs.push(dir);
    expect(await uncommittedChanges(dir)).toBe(false);
  });
});
