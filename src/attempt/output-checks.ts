/**
 * What an attempt wrote, checked before anything lands (the runner pushes the task branch, or local
 * mode offers it for merge):
 * - secrets in what it added, found by secretlint's recommended rules (cloud keys, GitHub, npm, Slack,
 *   SendGrid, OpenAI and Anthropic tokens, private keys, credentials in URLs, ...), never by a list of
 *   our own: read from the objects the commits hold (secret-scan.ts says how), never from a diff that
 *   an attribute or a NUL byte could turn into "Binary files differ", and in the names of the files it
 *   added; what a finding shows is masked. A file larger than MAX_FILE_BYTES is refused unread;
 * - edits to protected paths (protected-paths.ts), unless the task's tagged_paths name them: then they
 *   are a design concern, so that auto-merge waits for a person.
 * A blocking finding fails the attempt with the finding named, and nothing is pushed.
 */
import type { TaggedPath } from "../graph/model.ts";
import { type CheckoutGit, git, streamBlobs } from "./git.ts";
import { isProtected } from "./protected-paths.ts";
import { addedUnits, type Hit, SecretScan } from "./secret-scan.ts";

export interface OutputFindings {
  /** Each one blocks the push. */
  blocking: string[];
  /** Protected paths the task may edit: they become design concerns. */
  concerns: string[];
}

/**
 * The largest file the checks read: GitHub refuses a push with a file over 100 MiB
 * (https://docs.github.com/en/repositories/working-with-files/managing-large-files/about-large-files-on-github),
 * so no file the checks refuse could have landed there.
 */
export const MAX_FILE_BYTES = 100 * 1024 * 1024;

export interface OutputCheckOptions {
  maxFileBytes?: number;
}

/** How the checks read a repository: git's output, and objects streamed. */
export type RepoReader = Pick<CheckoutGit, "git" | "blobs">;

export function readerOf(repo: string | CheckoutGit): RepoReader {
  if (typeof repo !== "string") return repo;
  return { git: (args, input) => git(repo, args, input), blobs: (ids) => streamBlobs(repo, ids) };
}

/** A file a diff adds, changes or deletes, as `git diff --raw` lists it. */
export interface Change {
  path: string;
  status: string;
  oldMode: string;
  newMode: string;
  oldId: string;
  newId: string;
}

const GITLINK = "160000";
const NONE = "000000";

/**
 * Changes as `git diff --raw -z --no-abbrev` (or `git diff-tree --stdin`, whose commit ids between them
 * are skipped) lists them.
 */
export function parseRawChanges(out: string): Change[] {
  const fields = out.split("\0");
  const changes: Change[] = [];
  for (let i = 0; i < fields.length; i++) {
    if (!fields[i]!.startsWith(":")) continue;
    const [oldMode, newMode, oldId, newId, status] = fields[i]!.slice(1).split(" ");
    const path = fields[++i]!;
    changes.push({
      path,
      status: status!,
      oldMode: oldMode!,
      newMode: newMode!,
      oldId: oldId!,
      newId: newId!,
    });
  }
  return changes;
}

/** The files between two trees (`diffArgs`: what `git diff` compares). */
export async function changesOf(repo: RepoReader, diffArgs: string[]): Promise<Change[]> {
  return parseRawChanges(await repo.git(["diff", "--raw", "-z", "--no-renames", "--no-abbrev", ...diffArgs]));
}

/** `path` with each range masked. */
function masked(path: string, ranges: [number, number][]): string {
  return ranges.reduce(
    (text, [start, end]) => text.slice(0, start) + "*".repeat(Math.max(0, end - start)) + text.slice(end),
    path,
  );
}

function mib(bytes: number): string {
  return `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;
}

/** A blob's id when a mode holds one (not a deletion's nothing, not a submodule's commit). */
const blobOf = (mode: string, id: string) => (mode === NONE || mode === GITLINK ? null : id);

/**
 * Secrets in what `changes` add: in the names of the files they add, and in the contents of the files
 * they add or change, read whole from the repository's objects (one stream for all of them). Also
 * returns how each path may be shown (masked where its name holds a secret).
 */
export async function secretsInChanges(
  repo: RepoReader,
  changes: readonly Change[],
  options: OutputCheckOptions = {},
): Promise<{ findings: string[]; shown: (path: string) => string }> {
  const maxFileBytes = options.maxFileBytes ?? MAX_FILE_BYTES;
  const found: string[][] = changes.map(() => []);

  // Names: every path a change adds, as a line of its own, scanned first (a finding masks the name).
  const added = changes.flatMap((c, i) => (c.status === "A" ? [i] : []));
  const names = new SecretScan<number>();
  await names.add(
    "names",
    added.map((i) => changes[i]!.path),
    0,
  );
  const nameHits = (await names.run()).map(({ hit }) => hit);
  const ranges = new Map<string, [number, number][]>();
  for (const hit of nameHits) {
    const path = changes[added[hit.unit]!]!.path;
    ranges.set(path, [...(ranges.get(path) ?? []), [hit.start, hit.end]]);
  }
  const shown = (path: string) => {
    const r = ranges.get(path);
    return r ? masked(path, r) : path;
  };
  for (const hit of nameHits) {
    const i = added[hit.unit]!;
    const encoded = hit.encoding ? ` (${hit.encoding}-encoded)` : "";
    found[i]!.push(`a secret in the name of ${shown(changes[i]!.path)}${encoded}: ${hit.message}`);
  }

  // Contents: what each file is now, and what it was (to read only what the attempt added), within
  // the size the checks read.
  const ids = new Set(
    changes.flatMap((c) =>
      [blobOf(c.newMode, c.newId), blobOf(c.oldMode, c.oldId)].filter((id) => id !== null),
    ),
  );
  const sizes = new Map<string, number>();
  if (ids.size > 0)
    for (const line of (await repo.git(["cat-file", "--batch-check"], `${[...ids].join("\n")}\n`)).split(
      "\n",
    )) {
      const [id, , size] = line.split(" ");
      if (size !== undefined) sizes.set(id!, Number(size));
    }
  const readable = (id: string | null) => id !== null && (sizes.get(id) ?? Infinity) <= maxFileBytes;
  const plan = changes.flatMap((change, i) => {
    const next = blobOf(change.newMode, change.newId);
    if (next === null) return [];
    const previous = blobOf(change.oldMode, change.oldId);
    return [
      { i, change, next: readable(next) ? next : null, previous: readable(previous) ? previous : null },
    ];
  });
  const blobs = repo.blobs(
    plan.flatMap(({ next, previous }) =>
      next === null ? [] : previous === null ? [next] : [next, previous],
    ),
  );
  const contents = new SecretScan<number>();
  const where = new Map<number, (hit: Hit) => string>();
  try {
    for (const { i, change, next, previous } of plan) {
      const path = change.path;
      if (next === null) {
        const size = sizes.get(change.newId);
        found[i]!.push(
          size === undefined
            ? `${shown(path)} could not be read from the repository's objects`
            : `${shown(path)} is ${mib(size)}, more than the ${mib(maxFileBytes)} the output checks read of one file: keep files that large out of the task's work`,
        );
        continue;
      }
      const now = (await blobs.next()).value ?? Buffer.alloc(0);
      const before = previous === null ? null : ((await blobs.next()).value ?? null);
      const file = addedUnits(shown(path), now, before);
      where.set(i, file.where);
      await contents.add(path, file.units, i);
    }
  } finally {
    await blobs.return(undefined);
  }
  for (const { owner, hit } of await contents.run())
    found[owner]!.push(`a secret in ${where.get(owner)!(hit)}: ${hit.message}`);
  return { findings: found.flat(), shown };
}

/** True when a tagged path names `path`: the file itself, or a directory above it. */
function tagged(paths: readonly TaggedPath[], path: string): boolean {
  return paths.some(({ path: p }) => {
    const dir = p.replace(/\/+$/, "");
    return path === dir || path.startsWith(`${dir}/`);
  });
}

/** Checks the commits between `from` and `to` (the attempt's own work) in a repository or checkout. */
export async function checkOutput(
  repo: string | CheckoutGit,
  from: string,
  to: string,
  taggedPaths: readonly TaggedPath[],
  options: OutputCheckOptions = {},
): Promise<OutputFindings> {
  const reader = readerOf(repo);
  const changes = await changesOf(reader, [from, to]);
  const { findings: blocking, shown } = await secretsInChanges(reader, changes, options);
  const concerns: string[] = [];
  for (const { path } of changes.filter((c) => isProtected(c.path))) {
    if (tagged(taggedPaths, path))
      concerns.push(
        `the task edited the protected path ${shown(path)} (its tagged_paths allow it): a person should review it`,
      );
    else
      blocking.push(
        `an edit to the protected path ${shown(path)}, which the task's tagged_paths do not name`,
      );
  }
  return { blocking, concerns };
}
