/**
 * The runner's git directory in a job container, sealed before the agent starts: the agent (its own
 * user, as the Action runs it) cannot change its hooks, configuration or objects, but can read them
 * (its own repository borrows the objects), while the runner still commits there.
 */
import { spawnSync } from "node:child_process";
import { chmodSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { type AgentUser, agentUserPossible, claimAgentUser } from "../../src/attempt/agent-user.ts";
import { git, inCheckout, sealGitDir } from "../../src/attempt/git.ts";

let user: AgentUser | undefined;
afterEach(async () => {
  await user?.release();
  user = undefined;
});

describe.skipIf(!agentUserPossible())(
  "the runner's sealed git directory (needs root and setpriv, as in a job container)",
  () => {
    it("is read-only to the agent's user, and the runner still commits there", async () => {
      const workTree = mkdtempSync(join(tmpdir(), "agentrelay-seal-tree-"));
      // As the Action makes it: a directory of its own in the runner's temp (mkdtemp: closed to others).
      const gitDir = mkdtempSync(join(tmpdir(), "agentrelay-seal-"));
      await git(workTree, ["init", "-q", "--bare", gitDir]);
      const checkout = inCheckout({ workTree, gitDir });
      await checkout.git(["config", "core.bare", "false"]);
      writeFileSync(join(workTree, "a.txt"), "a\n");
      await checkout.git(["add", "--all"]);
      await checkout.git(["commit", "-q", "-m", "base"]);
      // A file the runner's umask left group-writable is sealed too.
      chmodSync(join(gitDir, "description"), 0o666);
      expect(sealGitDir(gitDir)).toBe(true);

      user = await claimAgentUser(tmpdir());
      const agent = (command: string) =>
        spawnSync(user!.prefix[0]!, [...user!.prefix.slice(1), "sh", "-c", command], { encoding: "utf8" });
      for (const target of ["config", "hooks/pre-push", "HEAD", "objects/info/alternates", "description"]) {
        const wrote = agent(`echo planted >> ${join(gitDir, target)}`);
        expect(wrote.status, `${target}: ${wrote.stderr}`).not.toBe(0);
        expect(wrote.stderr).toContain("Permission denied");
      }
      expect(agent(`mv ${gitDir} ${gitDir}-moved`).status).not.toBe(0);
      expect(readFileSync(join(gitDir, "config"), "utf8")).not.toContain("planted");
      // The agent can read it (its own repository borrows these objects).
      expect(agent(`cat ${join(gitDir, "HEAD")}`).stdout).toContain("ref: refs/heads/");
      expect(agent(`git --git-dir=${gitDir} cat-file -t HEAD`).stdout.trim()).toBe("commit");

      writeFileSync(join(workTree, "b.txt"), "b\n");
      await checkout.git(["add", "--all"]);
      await checkout.git(["commit", "-q", "-m", "the agent's work"]);
      expect(await checkout.git(["log", "--format=%s"])).toBe("the agent's work\nbase");
    });
  },
);
