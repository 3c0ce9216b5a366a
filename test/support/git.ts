/** Real git repositories in temporary directories. */
import { cpSync, existsSync, mkdtempSync, renameSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll } from "vitest";
import { git } from "../../src/attempt/git.ts";

/**
 * One repository made with git once, copied for each test: a file copy costs no process, where `git
 * init` and a commit cost two started from the test worker. It is put in place whole (a rename) at one
 * path per user, which every worker and every run then reads and none changes, so it is never left
 * behind more than once.
 */
const TEMPLATE = join(tmpdir(), `agentrelay-template-repo-${process.getuid?.() ?? 0}`);
let template: Promise<string> | undefined;
const initialRepo = (): Promise<string> =>
  (template ??= (async () => {
    if (existsSync(TEMPLATE)) return TEMPLATE;
    const dir = mkdtempSync(join(tmpdir(), "agentrelay-template-"));
    await git(dir, ["init", "-q", "-b", "main"]);
    await git(dir, ["commit", "-q", "--allow-empty", "-m", "initial"]);
    try {
      renameSync(dir, TEMPLATE);
    } catch {
      // Another worker put its own in place first: the same repository.
      rmSync(dir, { recursive: true, force: true });
    }
    return TEMPLATE;
  })());

/** A new repository on `main` with one empty commit, "initial". */
export async function tempRepo(prefix = "agentrelay-repo-"): Promise<string> {
  const from = await initialRepo();
  const dir = mkdtempSync(join(tmpdir(), prefix));
  cpSync(from, dir, { recursive: true });
  return dir;
}

/**
 * A repository `build` makes once, copied for each call of the function returned: the tests of a file
 * that start from the same history each change a copy of their own, and the history is made with git
 * once. Called at a test file's top level, which removes the copies and the original at its end.
 */
export function repoTemplate(build: () => Promise<string>): () => Promise<string> {
  let original: Promise<string> | undefined;
  const made: string[] = [];
  afterAll(async () => {
    for (const dir of [...made, ...(original ? [await original] : [])])
      rmSync(dir, { recursive: true, force: true });
  });
  return async () => {
    const from = await (original ??= build());
    const dir = mkdtempSync(join(tmpdir(), "agentrelay-repo-"));
    cpSync(from, dir, { recursive: true });
    made.push(dir);
    return dir;
  };
}
