/**
 * Where the fake GitHub keeps its repository: in memory (handler tests and benches) or in a real
 * bare git repository (end-to-end tests, where jobs clone and push over git). Both answer the same
 * questions synchronously, so the fake's routes read the same either way.
 */
import { execFileSync } from "node:child_process";
import { appendFileSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { GitObjects, SHA } from "./git-objects.ts";

export interface BranchMap {
  get(name: string): string | undefined;
  set(name: string, sha: string): void;
  has(name: string): boolean;
  delete(name: string): boolean;
  [Symbol.iterator](): IterableIterator<[string, string]>;
}

export interface RepoStore {
  readonly branches: BranchMap;
  /** A file at a commit or branch, or undefined. */
  file(ref: string, path: string): string | undefined;
  /** Every file of a commit or branch (small repositories only). */
  files(ref: string): Record<string, string>;
  /** Whether `ref` names a commit. */
  isCommit(ref: string): boolean;
  /** A commit with `files` changed (null: deleted) on top of `parent` (none: a root commit). */
  commit(parent: string | undefined, files: Record<string, string | null>, message: string): string;
  /** Merges `head` into `base` with a merge commit; null on a conflict. */
  merge(base: string, head: string, message: string): string | null;
  /** `head`'s changes as one commit on top of `base` (a squash merge); null on a conflict. */
  squash(base: string, head: string, message: string): string | null;
  /**
   * `head`'s own commits (merge commits left out, their changes kept) replayed one by one on top of
   * `base`, each with its message (a rebase merge); the new tip, or null on a conflict.
   */
  rebase(base: string, head: string): string | null;
  /** Whether a commit has more than one parent. */
  isMergeCommit(sha: string): boolean;
  /** The commits reachable from `ref`, newest first, with their parents and subject. */
  log(ref: string): { sha: string; parents: string[]; message: string }[];
  /** Commits reachable from `head` and not from `base`. */
  aheadBy(base: string, head: string): number;
  /** Files that differ between two commits. */
  changed(base: string, head: string): { filename: string; status: "added" | "modified" | "removed" }[];
}

interface Commit {
  parents: string[];
  files: Record<string, string>;
  message?: string;
}

export class MemoryStore implements RepoStore {
  private readonly commits = new Map<string, Commit>();
  private next = 1;
  readonly branches = new Map<string, string>();

  private resolve(ref: string): Commit | undefined {
    return this.commits.get(this.branches.get(ref) ?? ref);
  }
  file(ref: string, path: string) {
    return this.resolve(ref)?.files[path];
  }
  files(ref: string) {
    return { ...(this.resolve(ref)?.files ?? {}) };
  }
  isCommit(ref: string) {
    return this.commits.has(ref);
  }
  commit(parent: string | undefined, files: Record<string, string | null>, message: string) {
    const sha = (this.next++).toString(16).padStart(40, "0");
    const merged: Record<string, string> = { ...(parent ? this.commits.get(parent)!.files : {}) };
    for (const [path, text] of Object.entries(files)) {
      if (text === null) delete merged[path];
      else merged[path] = text;
    }
    this.commits.set(sha, { parents: parent ? [parent] : [], files: merged, message });
    return sha;
  }
  /** A three-way merge by whole files, as git merges them: null when both sides changed a file differently. */
  merge(base: string, head: string, message: string) {
    const files = this.mergedFiles(base, head);
    if (!files) return null;
    const sha = (this.next++).toString(16).padStart(40, "0");
    this.commits.set(sha, { parents: [base, head], files, message });
    return sha;
  }
  squash(base: string, head: string, message: string) {
    const files = this.mergedFiles(base, head);
    if (!files) return null;
    const sha = (this.next++).toString(16).padStart(40, "0");
    this.commits.set(sha, { parents: [base], files, message });
    return sha;
  }
  rebase(base: string, head: string) {
    const behind = this.ancestors(base);
    const own = [...this.ancestors(head)]
      .filter((s) => !behind.has(s) && this.commits.get(s)!.parents.length < 2)
      .sort();
    let tip = base;
    for (const sha of own) {
      // The base so far merged with the commit (whose history holds the commits before it): the
      // base with this commit's changes and those of the commits before it.
      const files = this.mergedFiles(tip, sha);
      if (!files) return null;
      const next = (this.next++).toString(16).padStart(40, "0");
      this.commits.set(next, { parents: [tip], files, message: this.commits.get(sha)!.message });
      tip = next;
    }
    return tip;
  }
  isMergeCommit(sha: string) {
    return (this.commits.get(sha)?.parents.length ?? 0) > 1;
  }
  log(ref: string) {
    return [...this.ancestors(this.branches.get(ref) ?? ref)]
      .sort()
      .reverse()
      .map((sha) => {
        const c = this.commits.get(sha)!;
        return { sha, parents: c.parents, message: (c.message ?? "").split("\n")[0]! };
      });
  }
  private mergedFiles(base: string, head: string): Record<string, string> | null {
    const theirs = this.ancestors(head);
    // The latest common ancestor (commits are numbered in the order they were made).
    const common = [...this.ancestors(base)]
      .filter((s) => theirs.has(s))
      .sort()
      .at(-1);
    const [was, ours, their] = [common, base, head].map((c) => (c ? this.commits.get(c)!.files : {})) as [
      Record<string, string>,
      Record<string, string>,
      Record<string, string>,
    ];
    const files: Record<string, string> = {};
    for (const path of new Set([...Object.keys(ours), ...Object.keys(their), ...Object.keys(was)])) {
      const [o, t, w] = [ours[path], their[path], was[path]];
      if (o !== w && t !== w && o !== t) return null;
      const text = o !== w ? o : t;
      if (text !== undefined) files[path] = text;
    }
    return files;
  }
  private ancestors(sha: string): Set<string> {
    const seen = new Set<string>();
    const stack = [sha];
    while (stack.length) {
      const s = stack.pop()!;
      if (seen.has(s) || !this.commits.has(s)) continue;
      seen.add(s);
      stack.push(...this.commits.get(s)!.parents);
    }
    return seen;
  }
  aheadBy(base: string, head: string) {
    const behind = this.ancestors(base);
    return [...this.ancestors(head)].filter((s) => !behind.has(s)).length;
  }
  changed(base: string, head: string) {
    const a = this.commits.get(base)!.files;
    const b = this.commits.get(head)!.files;
    return Object.keys(b)
      .filter((f) => a[f] !== b[f])
      .map((filename) => ({
        filename,
        status: a[filename] === undefined ? ("added" as const) : ("modified" as const),
      }));
  }
}

/** A file's text, or undefined where there is none (no file, or a directory: a ref's prefix). */
function readText(path: string): string | undefined {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return undefined;
  }
}

const IDENTITY = {
  GIT_AUTHOR_NAME: "GitHub",
  GIT_AUTHOR_EMAIL: "noreply@github.com",
  GIT_COMMITTER_NAME: "GitHub",
  GIT_COMMITTER_EMAIL: "noreply@github.com",
};

/**
 * GitHub refuses a push whose new commits add, change or remove a file under `.github/workflows/`
 * unless the token holds the `workflows` permission, with "refusing to allow a GitHub App to create or
 * update workflow `PATH` without `workflows` permission" (GitHub's "Workflow permission ... enables
 * GitHub Apps to edit GitHub Actions workflow files",
 * https://github.blog/changelog/2020-04-06-github-apps-workflow-permission; the git push refused so
 * in Kong/kong#12025 and actions/actions-runner-controller#2410). That includes a merge commit that brings a
 * workflow change from another branch: its diff against its first parent holds the file. No token of
 * agentrelay's holds it, so the bare repository refuses such pushes unless a test grants it
 * (`grantWorkflows`). The fake's own writes (plumbing, the REST routes) do not pass through the hook.
 */
const WORKFLOWS_HOOK = `#!/bin/sh
[ "$(git config --get agentrelay.workflows)" = write ] && exit 0
empty=$(git hash-object -t tree /dev/null)
while read old new ref; do
  case "$new" in 0000000000000000000000000000000000000000) continue ;; esac
  for c in $(git rev-list "$new" --not --all); do
    parent=$(git rev-parse -q --verify "$c^1" 2>/dev/null || echo "$empty")
    file=$(git diff --name-only "$parent" "$c" -- .github/workflows/ | head -n 1)
    if [ -n "$file" ]; then
      echo "refusing to allow a GitHub App to create or update workflow \\\`$file\\\` without \\\`workflows\\\` permission" >&2
      exit 1
    fi
  done
done
exit 0
`;

/** A real bare repository, driven with git plumbing (no worktree needed). */
export class BareRepoStore implements RepoStore {
  readonly branches: BranchMap;

  /** A new, empty bare repository in `dir`. */
  static create(dir: string): BareRepoStore {
    mkdirSync(dir, { recursive: true });
    execFileSync("git", ["init", "-q", "--bare", "-b", "main"], { cwd: dir });
    // Pushes stay loose objects and nothing packs them, so that this process reads them itself
    // (git-objects.ts; what is packed it asks git for).
    appendFileSync(join(dir, "config"), "[receive]\n\tunpackLimit = 100000\n[gc]\n\tauto = 0\n");
    writeFileSync(join(dir, "hooks", "pre-receive"), WORKFLOWS_HOOK, { mode: 0o755 });
    return new BareRepoStore(dir);
  }

  /** Lets pushes change workflow files (a token that holds `workflows`), or no longer. */
  grantWorkflows(granted: boolean): void {
    this.git(["config", "agentrelay.workflows", granted ? "write" : "none"]);
  }

  private readonly objects: GitObjects;
  /** Merges made, by the pair of commits merged. */
  private readonly merged = new Map<string, string | null>();

  constructor(readonly dir: string) {
    const git = this.git.bind(this);
    this.objects = new GitObjects(dir);
    this.branches = {
      get: (name) => this.readBranch(name),
      set: (name, sha) => {
        if (!this.objects.setBranch(name, sha)) git(["update-ref", `refs/heads/${name}`, sha]);
      },
      has: (name) => this.branches.get(name) !== undefined,
      delete: (name) => {
        if (!this.branches.has(name)) return false;
        if (!this.objects.deleteBranch(name)) git(["update-ref", "-d", `refs/heads/${name}`]);
        return true;
      },
      [Symbol.iterator]: () => {
        const lines = git(["for-each-ref", "--format=%(refname:short) %(objectname)", "refs/heads/"])
          .split("\n")
          .filter(Boolean);
        return lines.map((l) => l.split(" ") as [string, string])[Symbol.iterator]();
      },
    };
  }

  /**
   * A branch's commit read from the ref files as git writes them (loose, else packed-refs), not by
   * `git rev-parse`: the fake looks branches up hundreds of times a run, and each git process forked
   * from the test's large process cost more than the rest of the lookup.
   */
  private readBranch(name: string): string | undefined {
    const ref = `refs/heads/${name}`;
    const loose = readText(join(this.dir, ref))?.trim();
    if (loose && /^[0-9a-f]{40}$/.test(loose)) return loose;
    const packed = readText(join(this.dir, "packed-refs"))
      ?.split("\n")
      .find((line) => line.endsWith(` ${ref}`));
    return packed?.slice(0, 40);
  }

  private git(args: string[], input?: string, env: NodeJS.ProcessEnv = {}): string {
    return execFileSync("git", args, {
      cwd: this.dir,
      input,
      env: { ...process.env, ...IDENTITY, ...env },
      encoding: "utf8",
      maxBuffer: 64 << 20,
      // git's refusal is in the thrown error's message, not on the test run's output.
      stdio: "pipe",
    }).trim();
  }
  private gitMaybe(args: string[]): string {
    try {
      return this.git(args);
    } catch {
      return "";
    }
  }
  private rev(ref: string): string {
    return this.branches.get(ref) ?? ref;
  }
  /** The tree of a commit this process can read (a branch or a commit id), or undefined. */
  private treeOf(ref: string): string | undefined {
    const rev = this.rev(ref);
    return SHA.test(rev) ? this.objects.commit(rev)?.tree : undefined;
  }
  file(ref: string, path: string) {
    const tree = this.treeOf(ref);
    if (tree !== undefined && path.split("/").every((name) => name !== "" && name !== "." && name !== "..")) {
      // A folder is not a file (as MemoryStore answers); a submodule has no text here.
      const entry = this.objects.entry(tree, path);
      const blob =
        entry && entry.mode !== "40000" && entry.mode !== "160000" ? this.objects.read(entry.sha) : undefined;
      return blob?.body.toString("utf8");
    }
    try {
      return execFileSync("git", ["show", `${this.rev(ref)}:${path}`], {
        cwd: this.dir,
        encoding: "utf8",
        stdio: ["ignore", "pipe", "ignore"],
        maxBuffer: 64 << 20,
      });
    } catch {
      return undefined;
    }
  }
  files(ref: string) {
    const tree = this.treeOf(ref);
    if (tree !== undefined) {
      const files: Record<string, string> = {};
      for (const [path, entry] of this.objects.blobs(tree))
        if (entry.mode !== "160000") files[path] = this.objects.read(entry.sha)!.body.toString("utf8");
      return files;
    }
    const names = this.git(["ls-tree", "-r", "--name-only", this.rev(ref)])
      .split("\n")
      .filter(Boolean);
    return Object.fromEntries(names.map((n) => [n, this.file(ref, n)!]));
  }
  isCommit(ref: string) {
    return SHA.test(ref) && this.objects.commit(ref) !== undefined;
  }
  /** The commit `ref` names (a branch or a commit id), where this process can read it. */
  private readable(ref: string): string | undefined {
    const rev = this.rev(ref);
    return SHA.test(rev) && this.objects.commit(rev) ? rev : undefined;
  }
  /** A commit on `parents` with `tree`, written here where it can be, else by git. */
  private commitTree(tree: string, parents: string[], message: string): string {
    const shas = parents.map((p) => this.readable(p));
    if (shas.every((p) => p !== undefined))
      return this.objects.writeCommit(tree, shas, message, {
        name: IDENTITY.GIT_COMMITTER_NAME,
        email: IDENTITY.GIT_COMMITTER_EMAIL,
      });
    return this.git(["commit-tree", tree, ...parents.flatMap((p) => ["-p", p]), "-m", message]);
  }
  commit(parent: string | undefined, files: Record<string, string | null>, message: string) {
    const base = parent === undefined ? undefined : this.readable(parent);
    const paths = Object.entries(files).map(
      ([path, text]) => [path.split("/"), text] as [string[], string | null],
    );
    if (
      (parent === undefined || base !== undefined) &&
      paths.every(([names]) => names.every((n) => n !== "" && n !== "." && n !== ".."))
    ) {
      const tree =
        this.objects.treeWith(base && this.objects.commit(base)!.tree, paths) ??
        this.objects.write("tree", Buffer.alloc(0));
      return this.commitTree(tree, base ? [base] : [], message);
    }
    return this.fastImport(parent, files, message);
  }
  /**
   * One `git fast-import` writes a commit this process could not: hashing each file and updating an
   * index took two git processes a file. Its ref is a scratch one, outside the branches (`--force`:
   * each commit replaces the last).
   */
  private fastImport(parent: string | undefined, files: Record<string, string | null>, message: string) {
    const data = (text: string) => `data ${Buffer.byteLength(text)}\n${text}`;
    const when = `${Math.floor(Date.now() / 1000)} +0000`;
    const ref = "refs/agentrelay-standin/commit";
    const stream = [
      `reset ${ref}`,
      `commit ${ref}`,
      "mark :1",
      `author ${IDENTITY.GIT_AUTHOR_NAME} <${IDENTITY.GIT_AUTHOR_EMAIL}> ${when}`,
      `committer ${IDENTITY.GIT_COMMITTER_NAME} <${IDENTITY.GIT_COMMITTER_EMAIL}> ${when}`,
      // As `commit-tree -m` writes a message: ending in a newline.
      data(message.endsWith("\n") ? message : `${message}\n`),
      ...(parent ? [`from ${parent}`] : []),
      ...Object.entries(files).map(([path, text]) =>
        text === null ? `D ${path}` : `M 100644 inline ${path}\n${data(text)}`,
      ),
      "get-mark :1",
      "",
    ].join("\n");
    return this.git(["fast-import", "--quiet", "--force"], stream);
  }
  merge(base: string, head: string, message: string) {
    const tree = this.mergedTree(base, head);
    return tree && this.commitTree(tree, [base, head], message);
  }
  squash(base: string, head: string, message: string) {
    const tree = this.mergedTree(base, head);
    return tree && this.commitTree(tree, [base], message);
  }
  rebase(base: string, head: string) {
    const own = this.git(["rev-list", "--reverse", "--no-merges", `${base}..${head}`])
      .split("\n")
      .filter(Boolean);
    let tip = base;
    for (const sha of own) {
      // As MemoryStore.rebase: the tip so far merged with the commit is the tip with its changes.
      const tree = this.mergedTree(tip, sha);
      if (!tree) return null;
      const message = this.objects.commit(sha)?.message ?? this.git(["log", "-1", "--format=%B", sha]);
      tip = this.commitTree(tree, [tip], message.trim());
    }
    return tip;
  }
  isMergeCommit(sha: string) {
    const commit = SHA.test(sha) ? this.objects.commit(sha) : undefined;
    if (commit) return commit.parents.length > 1;
    return this.git(["rev-list", "--parents", "-n", "1", sha]).split(" ").length > 2;
  }
  log(ref: string) {
    return this.git(["log", "--format=%H%x09%P%x09%s", this.rev(ref)])
      .split("\n")
      .filter(Boolean)
      .map((line) => {
        const [sha, parents, message] = line.split("\t") as [string, string, string];
        return { sha, parents: parents.split(" ").filter(Boolean), message };
      });
  }
  /**
   * The tree of `head` merged into `base` (git's merge), null on a conflict. Two commits merge the same
   * way each time: the fake asks for the same pair twice a merge (what it would change, then the merge).
   */
  private mergedTree(base: string, head: string): string | null {
    const [from, to] = [this.readable(base), this.readable(head)];
    const key = from && to ? `${from} ${to}` : undefined;
    const known = key === undefined ? undefined : this.merged.get(key);
    if (known !== undefined) return known;
    const out = this.gitMaybe(["merge-tree", "--write-tree", base, head]);
    const tree = out ? out.split("\n")[0]! : null;
    if (key !== undefined) this.merged.set(key, tree);
    return tree;
  }
  aheadBy(base: string, head: string) {
    const [from, to] = [this.readable(base), this.readable(head)];
    const [behind, ahead] = [from && this.objects.ancestors(from), to && this.objects.ancestors(to)];
    if (behind && ahead) return [...ahead].filter((sha) => !behind.has(sha)).length;
    return Number(this.git(["rev-list", "--count", `${base}..${head}`]));
  }
  changed(base: string, head: string) {
    const [from, to] = [this.treeOf(base), this.treeOf(head)];
    if (from !== undefined && to !== undefined) {
      const [was, now] = [this.objects.blobs(from), this.objects.blobs(to)];
      const removed = [...was.keys()].filter((path) => !now.has(path));
      const added = [...now.keys()].filter((path) => !was.has(path));
      const blobsRemoved = new Set(removed.map((path) => was.get(path)!.sha));
      // A file moved whole is git's rename (its own status): git says so.
      if (!added.some((path) => blobsRemoved.has(now.get(path)!.sha)))
        return [...new Set([...was.keys(), ...now.keys()])]
          .sort()
          .filter(
            (path) =>
              was.get(path)?.sha !== now.get(path)?.sha || was.get(path)?.mode !== now.get(path)?.mode,
          )
          .map((filename) => ({
            filename,
            status: !was.has(filename)
              ? ("added" as const)
              : !now.has(filename)
                ? ("removed" as const)
                : ("modified" as const),
          }));
    }
    const kinds = { A: "added", M: "modified", D: "removed" } as const;
    return this.git(["diff", "--name-status", base, head])
      .split("\n")
      .filter(Boolean)
      .map((line) => {
        const [kind, filename] = line.split("\t") as [keyof typeof kinds, string];
        return { filename, status: kinds[kind] ?? "modified" };
      });
  }
}
