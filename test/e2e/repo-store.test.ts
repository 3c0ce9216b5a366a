/**
 * The stand-in's bare repository (harness/repo-store.ts) reads and writes its objects and branches in
 * the test's process (harness/git-objects.ts) instead of forking git for each: what it writes is what
 * git reads (the same trees as `git fast-import` and `git merge-tree` make, a repository `git fsck
 * --strict` accepts), and what it answers is what git answers.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { BareRepoStore } from "../../harness/repo-store.ts";

const root = mkdtempSync(join(tmpdir(), "agentrelay-repo-store-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const IDENTITY = {
  GIT_AUTHOR_NAME: "t",
  GIT_AUTHOR_EMAIL: "t@example.com",
  GIT_COMMITTER_NAME: "t",
  GIT_COMMITTER_EMAIL: "t@example.com",
};

function store(name: string) {
  const s = BareRepoStore.create(join(root, `${name}.git`));
  const git = (...args: string[]) =>
    execFileSync("git", args, { cwd: s.dir, encoding: "utf8", env: { ...process.env, ...IDENTITY } }).trim();
  return { s, git };
}

/** The tree git itself makes of `files` (an index, `write-tree`), in a scratch repository. */
function gitTree(files: Record<string, string>): string {
  const dir = mkdtempSync(join(root, "scratch-"));
  const git = (...args: string[]) => execFileSync("git", args, { cwd: dir, encoding: "utf8" }).trim();
  git("init", "-q");
  for (const [path, text] of Object.entries(files)) {
    const blob = execFileSync("git", ["hash-object", "-w", "--stdin"], {
      cwd: dir,
      input: text,
      encoding: "utf8",
    });
    git("update-index", "--add", "--cacheinfo", `100644,${blob.trim()},${path}`);
  }
  return git("write-tree");
}

describe("the stand-in's bare repository, in process", () => {
  it("writes commits whose trees are git's, and reads them back as git does", () => {
    const { s, git } = store("commits");
    const first = {
      "README.md": "# demo\n",
      "a-b": "x",
      "a/x": "1",
      "a.txt": "t",
      "z/y/w/v.txt": "deep",
      "é.md": "accented\n",
    };
    const one = s.commit(undefined, first, "one");
    expect(git("rev-parse", `${one}^{tree}`)).toBe(gitTree(first));
    const two = s.commit(one, { "a/x": "2", "a/y": "new", "README.md": null, "z/y/w/v.txt": null }, "two");
    const second = { "a-b": "x", "a/x": "2", "a/y": "new", "a.txt": "t", "é.md": "accented\n" };
    expect(git("rev-parse", `${two}^{tree}`)).toBe(gitTree(second));
    expect(git("log", "--format=%s:%P", two)).toBe(`two:${one}\none:`);
    s.branches.set("main", two);
    expect(git("rev-parse", "refs/heads/main")).toBe(two);
    expect(s.files("main")).toEqual(second);
    expect(s.file("main", "a/y")).toBe("new");
    expect(s.file(one, "z/y/w/v.txt")).toBe("deep");
    // A folder is not a file; neither is a path or branch that is not there.
    expect(s.file("main", "a")).toBeUndefined();
    expect(s.file("main", "z/y/w/v.txt")).toBeUndefined();
    expect(s.file("elsewhere", "a/x")).toBeUndefined();
    expect(s.isCommit(one)).toBe(true);
    expect(s.isCommit(git("rev-parse", `${one}^{tree}`))).toBe(false);
    expect(s.isCommit("1".repeat(40))).toBe(false);
    execFileSync("git", ["fsck", "--strict", "--no-dangling"], { cwd: s.dir });
  });

  it("merges, squashes and rebases as git merges, and counts and compares as git does", () => {
    const { s, git } = store("merges");
    const base = s.commit(undefined, { "shared.txt": "a\nb\nc\n", "keep.txt": "k" }, "base");
    const ours = s.commit(base, { "shared.txt": "A\nb\nc\n", "gone.txt": null }, "ours");
    const side = s.commit(base, { "side/new.txt": "s", "shared.txt": "a\nb\nC\n", "keep.txt": null }, "side");
    const merged = s.merge(ours, side, "Merge side")!;
    expect(
      git("cat-file", "-p", merged)
        .split("\n")
        .filter((l) => l.startsWith("parent ")),
    ).toEqual([`parent ${ours}`, `parent ${side}`]);
    expect(git("log", "-1", "--format=%B", merged)).toBe("Merge side");
    expect(git("show", `${merged}:shared.txt`)).toBe("A\nb\nC");
    expect(s.isMergeCommit(merged)).toBe(true);
    expect(s.isMergeCommit(side)).toBe(false);
    expect(git("rev-parse", `${s.squash(ours, side, "Squash")!}^{tree}`)).toBe(
      git("rev-parse", `${merged}^{tree}`),
    );
    const rebased = s.rebase(ours, side)!;
    expect(git("log", "--format=%s", rebased)).toBe("side\nours\nbase");
    expect(git("rev-parse", `${rebased}^{tree}`)).toBe(git("rev-parse", `${merged}^{tree}`));
    // A conflict is no merge.
    const other = s.commit(base, { "shared.txt": "Z\nb\nc\n" }, "other");
    expect(s.merge(ours, other, "conflict")).toBeNull();
    for (const [from, to] of [
      [base, merged],
      [merged, base],
      [ours, side],
      [side, rebased],
    ] as const) {
      expect(s.aheadBy(from, to)).toBe(Number(git("rev-list", "--count", `${from}..${to}`)));
      const kinds = { A: "added", M: "modified", D: "removed" } as Record<string, string>;
      const diff = git("diff", "--no-renames", "--name-status", from, to)
        .split("\n")
        .filter(Boolean)
        .map((line) => ({ filename: line.split("\t")[1], status: kinds[line.split("\t")[0]!] }));
      expect(s.changed(from, to)).toEqual(diff);
    }
    // A file moved whole: git's own answer, with its rename.
    const moved = s.commit(base, { "keep.txt": null, "kept.txt": "k" }, "move");
    expect(s.changed(base, moved)).toEqual([{ filename: "keep.txt", status: "modified" }]);
  });

  it("moves and deletes branches as git update-ref does, and leaves to git what it must refuse", () => {
    const { s, git } = store("branches");
    const one = s.commit(undefined, { "a.txt": "a" }, "one");
    s.branches.set("agentrelay/g/ws/integration", one);
    s.branches.set("main", one);
    expect(git("for-each-ref", "--format=%(refname:short)", "refs/heads/")).toBe(
      "agentrelay/g/ws/integration\nmain",
    );
    expect(s.branches.delete("agentrelay/g/ws/integration")).toBe(true);
    expect(s.branches.delete("agentrelay/g/ws/integration")).toBe(false);
    // The folders the name made are gone with it, so a branch may take the folder's name.
    s.branches.set("agentrelay/g", one);
    expect(s.branches.get("agentrelay/g")).toBe(one);
    expect(() => s.branches.set("agentrelay/g/ws", one)).toThrow(/cannot lock ref/);
    expect(() => s.branches.set("missing", "1".repeat(40))).toThrow(/nonexistent object/);
    // A branch git packed is deleted by git, from packed-refs too.
    git("pack-refs", "--all");
    expect(s.branches.get("main")).toBe(one);
    expect(s.branches.delete("main")).toBe(true);
    expect(git("for-each-ref", "--format=%(refname:short)", "refs/heads/")).toBe("agentrelay/g");
    // While another writer holds a branch's lock, the move is git's to refuse.
    mkdirSync(join(s.dir, "refs/heads/agentrelay"), { recursive: true });
    writeFileSync(join(s.dir, "refs/heads/agentrelay/g.lock"), "");
    expect(() => s.branches.set("agentrelay/g", s.commit(one, { "b.txt": "b" }, "two"))).toThrow(/lock/);
  });

  it("reads what git packed", () => {
    const { s, git } = store("packed");
    const one = s.commit(undefined, { "a/b.txt": "packed" }, "one");
    s.branches.set("main", s.commit(one, { "c.txt": "c" }, "two"));
    git("gc", "-q", "--prune=now");
    expect(git("count-objects", "-v")).toMatch(/^count: 0$/m);
    expect(s.files("main")).toEqual({ "a/b.txt": "packed", "c.txt": "c" });
    expect(s.aheadBy(one, "main")).toBe(1);
    expect(s.isCommit(one)).toBe(true);
    const three = s.commit(s.branches.get("main"), { "d.txt": "d" }, "three");
    expect(git("show", `${three}:a/b.txt`)).toBe("packed");
  });
});
