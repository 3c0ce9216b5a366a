/**
 * A bare repository's objects and branch refs read and written in this process, as git stores them
 * (https://git-scm.com/book/en/v2/Git-Internals-Git-Objects: a loose object is the zlib-deflated
 * `TYPE SIZE\0BODY` under objects/, named by the SHA-1 of those bytes; a branch is the file
 * refs/heads/NAME holding its commit, written through NAME.lock as git does). The stand-in's fake
 * GitHub asks its repository hundreds of questions a run; each git process forked from the test's
 * large process cost more CPU than the answer, and held the test's event loop while it ran. What is
 * not loose (an object in a pack) is asked of git.
 */
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, renameSync, rmdirSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { deflateSync, inflateSync } from "node:zlib";

export interface GitObject {
  type: string;
  body: Buffer;
}

export interface TreeEntry {
  mode: string;
  name: string;
  sha: string;
}

export interface CommitObject {
  tree: string;
  parents: string[];
  /** The raw message (after the blank line that ends the headers). */
  message: string;
}

export const SHA = /^[0-9a-f]{40}$/;
const TREE_MODE = "40000";
const FILE_MODE = "100644";

/** An identity and a time as a commit's author and committer lines write them. */
export interface Signature {
  name: string;
  email: string;
}

export class GitObjects {
  /** Objects never change: each is parsed once. */
  private readonly commits = new Map<string, CommitObject>();
  private readonly trees = new Map<string, TreeEntry[]>();

  constructor(private readonly dir: string) {}

  /** An object by its id, or undefined where the repository has none. */
  read(sha: string): GitObject | undefined {
    if (!SHA.test(sha)) return undefined;
    let raw: Buffer;
    try {
      raw = inflateSync(readFileSync(join(this.dir, "objects", sha.slice(0, 2), sha.slice(2))));
    } catch {
      return this.packed(sha);
    }
    const space = raw.indexOf(0x20);
    const nul = raw.indexOf(0);
    return { type: raw.subarray(0, space).toString(), body: raw.subarray(nul + 1) };
  }

  /** An object git keeps in a pack (one `git cat-file --batch`), or undefined. */
  private packed(sha: string): GitObject | undefined {
    const out = execFileSync("git", ["cat-file", "--batch"], { cwd: this.dir, input: `${sha}\n` });
    const newline = out.indexOf(0x0a);
    const [, type, size] = out.subarray(0, newline).toString().split(" ");
    if (type === undefined || size === undefined || type === "missing") return undefined;
    return { type, body: out.subarray(newline + 1, newline + 1 + Number(size)) };
  }

  /** Writes an object (if the repository lacks it) and returns its id. */
  write(type: string, body: Buffer): string {
    const raw = Buffer.concat([Buffer.from(`${type} ${body.length}\0`), body]);
    const sha = createHash("sha1").update(raw).digest("hex");
    const folder = join(this.dir, "objects", sha.slice(0, 2));
    const path = join(folder, sha.slice(2));
    if (existsSync(path)) return sha;
    mkdirSync(folder, { recursive: true });
    // Written aside and renamed into place, as git does: a reader never sees half an object.
    const temp = join(folder, `tmp_obj_${process.pid}_${sha}`);
    writeFileSync(temp, deflateSync(raw), { mode: 0o444 });
    renameSync(temp, path);
    return sha;
  }

  commit(sha: string): CommitObject | undefined {
    const known = this.commits.get(sha);
    if (known) return known;
    const object = this.read(sha);
    if (object?.type !== "commit") return undefined;
    const text = object.body.toString("utf8");
    const end = text.indexOf("\n\n");
    const headers = (end < 0 ? text : text.slice(0, end)).split("\n");
    const commit: CommitObject = {
      tree: headers.find((h) => h.startsWith("tree "))!.slice(5),
      parents: headers.filter((h) => h.startsWith("parent ")).map((h) => h.slice(7)),
      message: end < 0 ? "" : text.slice(end + 2),
    };
    this.commits.set(sha, commit);
    return commit;
  }

  tree(sha: string): TreeEntry[] | undefined {
    const known = this.trees.get(sha);
    if (known) return known;
    const object = this.read(sha);
    if (object?.type !== "tree") return undefined;
    const entries: TreeEntry[] = [];
    const body = object.body;
    for (let at = 0; at < body.length;) {
      const space = body.indexOf(0x20, at);
      const nul = body.indexOf(0, space);
      entries.push({
        mode: body.subarray(at, space).toString(),
        name: body.subarray(space + 1, nul).toString("utf8"),
        sha: body.subarray(nul + 1, nul + 21).toString("hex"),
      });
      at = nul + 21;
    }
    this.trees.set(sha, entries);
    return entries;
  }

  /** The entry at `path` below tree `tree`, or undefined. */
  entry(tree: string, path: string): TreeEntry | undefined {
    let entry: TreeEntry | undefined = { mode: TREE_MODE, name: "", sha: tree };
    for (const name of path.split("/")) {
      if (entry.mode !== TREE_MODE) return undefined;
      entry = this.tree(entry.sha)?.find((e) => e.name === name);
      if (!entry) return undefined;
    }
    return entry;
  }

  /** Every blob below `tree`, by path (symbolic links as their target, as `git show` prints them). */
  blobs(tree: string, prefix = "", into = new Map<string, TreeEntry>()): Map<string, TreeEntry> {
    for (const e of this.tree(tree) ?? []) {
      if (e.mode === TREE_MODE) this.blobs(e.sha, `${prefix}${e.name}/`, into);
      else into.set(`${prefix}${e.name}`, e);
    }
    return into;
  }

  /**
   * A tree like `base` (none: empty) with `files` written (as regular files) and removed (null),
   * folders left empty dropped, as `git fast-import` writes them; its id.
   */
  treeWith(base: string | undefined, files: [string[], string | null][]): string | undefined {
    const entries = new Map((base ? this.tree(base) : [])?.map((e) => [e.name, e]));
    const byName = new Map<string, [string[], string | null][]>();
    for (const [path, text] of files) {
      const [name, ...rest] = path as [string, ...string[]];
      if (rest.length === 0) {
        if (text === null) entries.delete(name);
        else entries.set(name, { mode: FILE_MODE, name, sha: this.write("blob", Buffer.from(text)) });
        continue;
      }
      byName.set(name, [...(byName.get(name) ?? []), [rest, text]]);
    }
    for (const [name, below] of byName) {
      const was = entries.get(name);
      const sha = this.treeWith(was?.mode === TREE_MODE ? was.sha : undefined, below);
      if (sha) entries.set(name, { mode: TREE_MODE, name, sha });
      else entries.delete(name);
    }
    if (entries.size === 0) return undefined;
    // Git's order: by name, a folder's name as if it ended in "/".
    const key = (e: TreeEntry) => Buffer.from(e.mode === TREE_MODE ? `${e.name}/` : e.name);
    const sorted = [...entries.values()].sort((a, b) => Buffer.compare(key(a), key(b)));
    return this.write(
      "tree",
      Buffer.concat(sorted.flatMap((e) => [Buffer.from(`${e.mode} ${e.name}\0`), Buffer.from(e.sha, "hex")])),
    );
  }

  /** A commit object, as `git commit-tree -m MESSAGE` writes it (the message ends in a newline). */
  writeCommit(tree: string, parents: string[], message: string, who: Signature): string {
    const when = `${Math.floor(Date.now() / 1000)} +0000`;
    const text = [
      `tree ${tree}`,
      ...parents.map((p) => `parent ${p}`),
      `author ${who.name} <${who.email}> ${when}`,
      `committer ${who.name} <${who.email}> ${when}`,
      "",
      message.endsWith("\n") ? message : `${message}\n`,
    ].join("\n");
    return this.write("commit", Buffer.from(text));
  }

  /** Every commit reachable from `sha` (undefined if one of them cannot be read). */
  ancestors(sha: string): Set<string> | undefined {
    const seen = new Set<string>();
    const stack = [sha];
    while (stack.length > 0) {
      const next = stack.pop()!;
      if (seen.has(next)) continue;
      const commit = this.commit(next);
      if (!commit) return undefined;
      seen.add(next);
      stack.push(...commit.parents);
    }
    return seen;
  }

  /**
   * Moves branch `name` to commit `sha` as `git update-ref` does (through `refs/heads/NAME.lock`);
   * false where git must do it: another writer holds the lock (git waits for it a while), the ref's
   * folder is a branch or its name a folder, or the commit is not one this process can read.
   */
  setBranch(name: string, sha: string): boolean {
    if (!this.commit(sha)) return false;
    const path = join(this.dir, "refs", "heads", name);
    try {
      mkdirSync(join(path, ".."), { recursive: true });
    } catch {
      return false;
    }
    try {
      writeFileSync(`${path}.lock`, `${sha}\n`, { flag: "wx" });
    } catch {
      return false;
    }
    try {
      renameSync(`${path}.lock`, path);
      return true;
    } catch {
      rmSync(`${path}.lock`, { force: true });
      return false;
    }
  }

  /**
   * Removes a branch git keeps only as a loose ref, with the folders its name left empty (as
   * `git update-ref -d` does); false where git must (the branch is also in packed-refs, or another
   * writer holds its lock).
   */
  deleteBranch(name: string): boolean {
    const ref = `refs/heads/${name}`;
    if (existsSync(join(this.dir, `${ref}.lock`))) return false;
    const packed = existsSync(join(this.dir, "packed-refs"))
      ? readFileSync(join(this.dir, "packed-refs"), "utf8")
      : "";
    if (packed.split("\n").some((line) => line.endsWith(` ${ref}`))) return false;
    rmSync(join(this.dir, ref), { force: true });
    for (let folder = dirname(ref); folder !== "refs/heads"; folder = dirname(folder)) {
      try {
        rmdirSync(join(this.dir, folder));
      } catch {
        break;
      }
    }
    return true;
  }
}
