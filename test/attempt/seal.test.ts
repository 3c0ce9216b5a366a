/**
 * The runner's git directory in a job container, sealed before the agent starts: the agent (root
 * without capabilities, as the Action runs it) cannot change its hooks, configuration or objects,
 * while the runner still commits there.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { AGENT_GID } from "../../src/attempt/egress/egress.ts";
import { DROP_CAPABILITIES } from "../../src/attempt/egress/namespace.ts";
import { git, inCheckout, sealGitDir } from "../../src/attempt/git.ts";

const root = process.getuid?.() === 0 && spawnSync("setpriv", ["--version"]).status === 0;

describe.skipIf(!root)(
  "the runner's sealed git directory (needs root and setpriv, as in a job container)",
  () => {
    it("is read-only to a process without capabilities, and the runner still commits there", async () => {
      const workTree = mkdtempSync(join(tmpdir(), "agentrelay-seal-tree-"));
      const gitDir = join(mkdtempSync(join(tmpdir(), "agentrelay-seal-")), "git");
      await git(workTree, ["init", "-q", "--bare", gitDir]);
      const checkout = inCheckout({ workTree, gitDir });
      await checkout.git(["config", "core.bare", "false"]);
      writeFileSync(join(workTree, "a.txt"), "a\n");
      await checkout.git(["add", "--all"]);
      await checkout.git(["commit", "-q", "-m", "base"]);
      expect(sealGitDir(gitDir)).toBe(true);

      // The agent, as the Action starts it: root, the agent's group, no capability at all.
      const agent = (command: string) =>
        spawnSync(
          "setpriv",
          [`--regid=${AGENT_GID}`, "--clear-groups", ...DROP_CAPABILITIES.slice(1), "sh", "-c", command],
          {
            encoding: "utf8",
          },
        );
      for (const target of ["config", "hooks/pre-push", "HEAD", "objects/info/alternates"]) {
        const wrote = agent(`echo planted >> ${join(gitDir, target)}`);
        expect(wrote.status, `${target}: ${wrote.stderr}`).not.toBe(0);
        expect(wrote.stderr).toContain("Permission denied");
      }
      expect(readFileSync(join(gitDir, "config"), "utf8")).not.toContain("planted");
      // The agent can read it (its own repository borrows these objects).
      expect(agent(`cat ${join(gitDir, "HEAD")}`).stdout).toContain("ref: refs/heads/");

      writeFileSync(join(workTree, "b.txt"), "b\n");
      await checkout.git(["add", "--all"]);
      await checkout.git(["commit", "-q", "-m", "the agent's work"]);
      expect(await checkout.git(["log", "--format=%s"])).toBe("the agent's work\nbase");
    });
  },
);
