/**
 * A StateStore on local git refs: each run is a ref (`refs/agentrelay/runs/<graph>/<run>`) pointing at
 * a commit whose tree holds the run in the layout of protocol/state-layout.ts (`run.json` and
 * `tasks/NNN.json`), each write a commit on top of the version read that changes only the parts the
 * round changed. The write is `git update-ref REF NEW OLD`, which git applies only if REF still
 * points at OLD: a real compare-and-swap. The history of a run is `git log -p refs/agentrelay/runs/<graph>/<run>`;
 * runs stored as one `state.json` (the earlier format) still load, and their next write converts them.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { StateStore, Versioned } from "../engine/store.ts";
import type { RunState } from "../engine/types.ts";
import { catFiles, git, gitRaw } from "../attempt/git.ts";
import {
  bucketPath,
  layoutOf,
  LOCAL_PER_TASK,
  nextParts,
  type StoredParts,
  stateOfParts,
} from "../protocol/state-layout.ts";

const ZERO = "0".repeat(40);
const LEGACY = "state.json";

export const stateRef = (run: string): string => `refs/agentrelay/runs/${run}`;

/** What this store last read or wrote of a run: its parts' texts and blob ids, at one version. */
interface Known {
  version: string;
  parts: StoredParts;
  bucketBlobs: string[];
  /** The task ids of each bucket, once worked out. */
  members: string[][] | null;
}

export class GitRefStateStore implements StateStore {
  private readonly known = new Map<string, Known>();

  constructor(private readonly repo: string) {}

  async load(run: string): Promise<Versioned | null> {
    const head = await gitRaw(this.repo, ["rev-parse", "--verify", "--quiet", `${stateRef(run)}^{commit}`]);
    if (head.code !== 0) return null;
    const version = head.stdout.trim();
    const [index, legacy] = await catFiles(this.repo, [`${version}:run.json`, `${version}:${LEGACY}`]);
    const layout = index ? layoutOf(index) : null;
    let parts: StoredParts;
    let bucketBlobs: string[] = [];
    if (index && layout) {
      const listing = await git(this.repo, ["ls-tree", `${version}:tasks`]);
      // `<mode> blob <oid>\t<name>` per line.
      const blobs = new Map(
        listing
          .split("\n")
          .filter(Boolean)
          .map((line) => [line.split("\t")[1]!, line.split("\t")[0]!.split(" ")[2]!]),
      );
      bucketBlobs = Array.from({ length: layout.buckets }, (_, b) => blobs.get(bucketPath(b).slice(6)) ?? "");
      const texts = await catFiles(
        this.repo,
        bucketBlobs.map((oid) => oid || ZERO),
      );
      parts = {
        buckets: layout.buckets,
        index,
        bucketTexts: texts.map((t) => t ?? "{}"),
        graphText: null,
        graphKey: null,
      };
    } else if (legacy != null) {
      parts = { buckets: 0, index: legacy, bucketTexts: [], graphText: null, graphKey: null };
    } else return null;
    this.known.set(run, { version, parts, bucketBlobs, members: null });
    return { state: stateOfParts(parts, LOCAL_PER_TASK), version };
  }

  async compareAndSwap(
    run: string,
    expected: string | null,
    next: RunState,
    touched?: ReadonlySet<string>,
  ): Promise<string | null> {
    const known = this.known.get(run);
    const from = expected !== null && known?.version === expected ? known : undefined;
    const parts = nextParts(from && { ...from.parts, members: from.members }, next, LOCAL_PER_TASK, touched);
    const { buckets, bucketTexts: texts, members, changed, index } = parts;
    const blobs = parts.partial ? [...from!.bucketBlobs] : [];
    const written = await this.hashObjects([index, ...changed.map((b) => texts[b]!)]);
    changed.forEach((b, i) => (blobs[b] = written[i + 1]!));
    const tasksTree = await git(
      this.repo,
      ["mktree"],
      blobs.map((oid, b) => `100644 blob ${oid}\t${bucketPath(b).slice(6)}\n`).join(""),
    );
    const tree = await git(
      this.repo,
      ["mktree"],
      `100644 blob ${written[0]}\trun.json\n040000 tree ${tasksTree}\ttasks\n`,
    );
    const parents = expected ? ["-p", expected] : [];
    const message = `${run}: state ${next.seq}${next.outcome ? ` (${next.outcome})` : ""}`;
    const commit = await git(this.repo, ["commit-tree", tree, ...parents, "-m", message]);
    const update = await gitRaw(this.repo, ["update-ref", stateRef(run), commit, expected ?? ZERO]);
    if (update.code !== 0) {
      this.known.delete(run);
      return null;
    }
    this.known.set(run, {
      version: commit,
      parts: { buckets, index, bucketTexts: texts, graphText: null, graphKey: null },
      bucketBlobs: blobs,
      members,
    });
    return commit;
  }

  /** Writes blobs, one git call for all of them. */
  private async hashObjects(texts: string[]): Promise<string[]> {
    const dir = mkdtempSync(join(tmpdir(), "agentrelay-blobs-"));
    try {
      const paths = texts.map((text, i) => {
        const path = join(dir, String(i));
        writeFileSync(path, text);
        return path;
      });
      return (
        await git(this.repo, ["hash-object", "-w", "--no-filters", "--stdin-paths"], `${paths.join("\n")}\n`)
      ).split("\n");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
}
