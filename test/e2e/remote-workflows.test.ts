/**
 * The stand-in's git remote refuses, as GitHub does, a push whose new commits change a workflow file
 * from a token without the `workflows` permission: a commit that edits one, and a merge commit that
 * brings in a workflow change the target already has (what a verification or a resolution pushes).
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, mkdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { BareRepoStore } from "../../harness/repo-store.ts";
import { inCheckout } from "../../src/attempt/git.ts";
import { workflowsBroughtIn } from "../../src/attempt/workflow-files.ts";

const IDENTITY = {
  GIT_AUTHOR_NAME: "t",
  GIT_AUTHOR_EMAIL: "t@example.com",
  GIT_COMMITTER_NAME: "t",
  GIT_COMMITTER_EMAIL: "t@example.com",
};

function setup() {
  const root = mkdtempSync(join(tmpdir(), "remote-workflows-"));
  const bare = join(root, "demo.git");
  const store = BareRepoStore.create(bare);
  const main = store.commit(
    undefined,
    { "README.md": "hi\n", ".github/workflows/ci.yml": "on: push\n" },
    "init",
  );
  store.branches.set("main", main);
  store.branches.set("feature", store.commit(main, { "a.txt": "a\n" }, "a"));
  // A person (whose token holds `workflows`) changes the workflow on main: the fake's own write.
  store.branches.set(
    "main",
    store.commit(main, { ".github/workflows/ci.yml": "on: [push, merge_group]\n" }, "ci"),
  );
  const clone = join(root, "clone");
  execFileSync("git", ["clone", "-q", bare, clone]);
  const git = (...args: string[]) =>
    execFileSync("git", args, { cwd: clone, env: { ...process.env, ...IDENTITY }, encoding: "utf8" });
  const push = (ref: string) => {
    try {
      git("push", "-q", "origin", ref);
      return "pushed";
    } catch (error) {
      return String((error as { stderr?: string }).stderr);
    }
  };
  return { store, git, push, clone };
}

describe("the stand-in's git remote and workflow files", () => {
  it("refuses a merge that brings the target's workflow change into a branch, and takes the branch without it", async () => {
    const { git, push, clone } = setup();
    git("switch", "-q", "feature");
    git("merge", "-q", "--no-edit", "origin/main");
    // What a verification's job sees before it pushes: the merge brings the target's workflow change.
    const checkout = inCheckout({ workTree: clone, gitDir: join(clone, ".git") });
    expect(await workflowsBroughtIn(checkout, "origin/feature", "HEAD")).toEqual([
      ".github/workflows/ci.yml",
    ]);
    expect(push("HEAD:feature")).toContain(
      "refusing to allow a GitHub App to create or update workflow `.github/workflows/ci.yml` without `workflows` permission",
    );
    git("reset", "-q", "--hard", "origin/feature");
    writeFileSync(join(git("rev-parse", "--show-toplevel").trim(), "b.txt"), "b\n");
    git("add", "b.txt");
    git("commit", "-qm", "b");
    expect(push("HEAD:feature")).toBe("pushed");
  });

  it("refuses a commit that edits a workflow file, unless the token holds `workflows`", async () => {
    const { store, git, push, clone } = setup();
    git("switch", "-q", "feature");
    mkdirSync(join(clone, ".github", "workflows"), { recursive: true });
    writeFileSync(join(clone, ".github", "workflows", "new.yml"), "on: push\n");
    git("add", ".");
    git("commit", "-qm", "new workflow");
    expect(push("HEAD:feature")).toContain(
      "workflow `.github/workflows/new.yml` without `workflows` permission",
    );
    store.grantWorkflows(true);
    expect(push("HEAD:feature")).toBe("pushed");
  });
});
