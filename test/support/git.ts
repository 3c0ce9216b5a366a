/** Real git repositories in temporary directories. */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { git } from "../../src/attempt/git.ts";

export async function tempRepo(prefix = "agentrelay-repo-"): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  await git(dir, ["init", "-q", "-b", "main"]);
  await git(dir, ["commit", "-q", "--allow-empty", "-m", "initial"]);
  return dir;
}
