/**
 * The runner's git options and its pinned git directory, on real repositories: a repository's
 * configuration that asks for a signing or a password program makes the runner's commit run neither,
 * and what an agent of the runner's own user writes into the runner's git directory after the pin
 * (configuration, includes, hooks, alternates) is gone before the runner's next command there.
 */
import { chmodSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { execFileSync } from "node:child_process";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { git, inCheckout, pinGitDir } from "../../src/attempt/git.ts";
import { tempRepo } from "../support/git.ts";

/** A program that leaves a marker when it runs. */
function trap(dir: string): { program: string; marker: string } {
  const marker = join(dir, "ran");
  const program = join(dir, "trap.sh");
  writeFileSync(program, `#!/bin/sh\necho "$0 $*" >> ${marker}\nexit 1\n`);
  chmodSync(program, 0o755);
  return { program, marker };
}

/** git as the agent runs it: its own process, none of the runner's options. */
const agentGit = (cwd: string, ...args: string[]) => execFileSync("git", args, { cwd, encoding: "utf8" });

describe("the runner's git", () => {
  it("commits without running a signing or password program a repository asks for", async () => {
    const repo = await tempRepo();
    const { program, marker } = trap(mkdtempSync(join(tmpdir(), "agentrelay-trap-")));
    agentGit(repo, "config", "commit.gpgSign", "true");
    agentGit(repo, "config", "gpg.program", program);
    agentGit(repo, "config", "core.askPass", program);
    writeFileSync(join(repo, "a.txt"), "a\n");
    await git(repo, ["add", "a.txt"]);
    await git(repo, ["commit", "-q", "-m", "the runner's commit"]);
    expect(await git(repo, ["log", "-1", "--format=%s"])).toBe("the runner's commit");
    expect(existsSync(marker)).toBe(false);
  });

  it("puts a pinned git directory back before each command: no planted configuration, include or hook counts", async () => {
    const workTree = mkdtempSync(join(tmpdir(), "agentrelay-pin-tree-"));
    const gitDir = join(mkdtempSync(join(tmpdir(), "agentrelay-pin-")), "git");
    await git(workTree, ["init", "-q", "--bare", gitDir]);
    const checkout = inCheckout({ workTree, gitDir });
    await checkout.git(["config", "core.bare", "false"]);
    await checkout.git(["config", "remote.origin.url", "https://github.com/octo/demo.git"]);
    writeFileSync(join(workTree, "a.txt"), "a\n");
    await checkout.git(["add", "--all"]);
    await checkout.git(["commit", "-q", "-m", "base"]);
    const config = readFileSync(join(gitDir, "config"), "utf8");
    pinGitDir(gitDir);

    // The agent, as the runner's user, rewrites the runner's git directory.
    const { program, marker } = trap(mkdtempSync(join(tmpdir(), "agentrelay-trap-")));
    const included = join(workTree, "evil.config");
    writeFileSync(included, `[commit]\n\tgpgSign = true\n[gpg]\n\tprogram = ${program}\n`);
    const inRunner = (...args: string[]) => agentGit(workTree, `--git-dir=${gitDir}`, ...args);
    inRunner("config", "remote.origin.url", "https://attacker.example/demo.git");
    inRunner("config", "url.https://attacker.example/.insteadOf", "https://github.com/");
    inRunner("config", "include.path", included);
    writeFileSync(join(gitDir, "hooks", "pre-commit"), `#!/bin/sh\n${program} hook\n`);
    chmodSync(join(gitDir, "hooks", "pre-commit"), 0o755);
    writeFileSync(join(gitDir, "objects", "info", "alternates"), `${tmpdir()}\n`);
    pinGitDir(gitDir); // a second pin, after the agent, keeps the first

    writeFileSync(join(workTree, "b.txt"), "b\n");
    await checkout.git(["add", "--all"]);
    await checkout.git(["commit", "-q", "-m", "the agent's work"]);
    expect(await checkout.git(["log", "--format=%s"])).toBe("the agent's work\nbase");
    expect(existsSync(marker)).toBe(false);
    expect(readFileSync(join(gitDir, "config"), "utf8")).toBe(config);
    expect(await checkout.git(["remote", "get-url", "--push", "origin"])).toBe(
      "https://github.com/octo/demo.git",
    );
    expect(existsSync(join(gitDir, "hooks"))).toBe(false);
    expect(existsSync(join(gitDir, "objects", "info", "alternates"))).toBe(false);
  });
});
