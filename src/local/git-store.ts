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
import { graphFingerprint } from "../engine/engine.ts";
import type { Graph } from "../graph/model.ts";
import { checkRunKey, MAX_PART_BYTES, StateDamageError } from "../protocol/state-check.ts";
import {
  bucketPath,
  checkTaskRecords,
  indexLayout,
  knownAt,
  LOCAL_PER_TASK,
  nextParts,
  type StoredParts,
  stateCommitMessage,
  stateOfParts,
} from "../protocol/state-layout.ts";

const ZERO = "0".repeat(40);
const LEGACY = "state.json";

export const stateRef = (run: string): string => `refs/agentrelay/runs/${run}`;

/** A blob of a run's tree: its id, size and part name (`tasks/003.json`). */
interface Blob {
  oid: string;
  size: number;
  part: string;
}

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
  /** The tasks of the graph the runs follow, and its fingerprint, when the store was given it. */
  private readonly expected: { fingerprint: string; tasks: string[] } | null;

  constructor(
    private readonly repo: string,
    /** The graph the runs follow: a state of that graph must hold a record of each of its tasks, and no other. */
    graph?: Graph,
  ) {
    this.expected = graph
      ? { fingerprint: graphFingerprint(graph), tasks: graph.tasks.map((t) => t.id) }
      : null;
  }

  async load(run: string): Promise<Versioned | null> {
    const head = await gitRaw(this.repo, ["rev-parse", "--verify", "--quiet", `${stateRef(run)}^{commit}`]);
    if (head.code !== 0) return null;
    const version = head.stdout.trim();
    try {
      const again = this.again(run, version);
      if (again) return { state: again, version };
      const read = await this.readAt(version, run);
      this.known.set(run, { version, ...read, members: null });
      return { state: read.state, version };
    } catch (error) {
      if (!(error instanceof StateDamageError)) throw error;
      throw await this.damaged(run, version, error);
    }
  }

  /**
   * The run's state at `version` from what this store last read or wrote of it, checked as a read
   * checks it, or null when that was another version. A version is a commit id, which names its tree
   * and so every part's text: the parts are what reading them again would give (no git runs).
   */
  private again(run: string, version: string): RunState | null {
    const known = this.known.get(run);
    if (known?.version !== version) return null;
    const { parts } = known;
    const texts = [parts.index, ...parts.bucketTexts];
    // A part past the bound (or missing) is read again, which says so as a read does.
    if (texts.some((text) => text === null || Buffer.byteLength(text) > MAX_PART_BYTES)) return null;
    return this.checked(stateOfParts<RunState>(parts, LOCAL_PER_TASK), run, parts.buckets);
  }

  /**
   * The run's parts and state at a version of its ref, each part checked (state-check.ts), then the
   * whole: it is the run of its ref, and, where the store knows the graph and the state follows it,
   * it holds a record of each of the graph's tasks.
   */
  private async readAt(
    version: string,
    run: string,
  ): Promise<{ parts: StoredParts; bucketBlobs: string[]; state: RunState }> {
    const top = await this.listing(version, "");
    const index = top.get("run.json");
    const legacy = top.get(LEGACY);
    if (!index && !legacy) throw new StateDamageError("run.json", "is missing");
    if (!index) {
      const [text] = await this.read([legacy!]);
      const parts = { buckets: 0, index: text!, bucketTexts: [], graphText: null, graphKey: null };
      return { parts, bucketBlobs: [], state: this.checked(stateOfParts(parts, LOCAL_PER_TASK), run, 0) };
    }
    const [indexText] = await this.read([index]);
    const { buckets } = indexLayout(indexText!);
    const listed = await this.listing(version, "tasks");
    const blobs = Array.from({ length: buckets }, (_, b) => listed.get(bucketPath(b).slice(6)));
    const texts = await this.read(blobs.map((blob, b) => blob ?? { oid: "", size: 0, part: bucketPath(b) }));
    const parts = { buckets, index: indexText!, bucketTexts: texts, graphText: null, graphKey: null };
    const state = this.checked(stateOfParts<RunState>(parts, LOCAL_PER_TASK), run, buckets);
    return { parts, bucketBlobs: blobs.map((blob) => blob!.oid), state };
  }

  private checked(state: RunState, run: string, buckets: number): RunState {
    checkRunKey(buckets > 0 ? "run.json" : LEGACY, state, run);
    if (this.expected && state.fingerprint === this.expected.fingerprint)
      checkTaskRecords(state, this.expected.tasks, buckets);
    return state;
  }

  /** The blobs under `dir` of a version's tree, by name, with their sizes. */
  private async listing(version: string, dir: string): Promise<Map<string, Blob>> {
    const out = await gitRaw(this.repo, ["ls-tree", "-l", `${version}:${dir}`]);
    const blobs = new Map<string, Blob>();
    // `<mode> blob <oid> <size>\t<name>` per line.
    for (const line of out.stdout.split("\n").filter(Boolean)) {
      const [meta, name] = line.split("\t") as [string, string];
      const [, type, oid, size] = meta.split(/\s+/) as [string, string, string, string];
      if (type === "blob") blobs.set(name, { oid, size: Number(size), part: dir ? `${dir}/${name}` : name });
    }
    return blobs;
  }

  /** The texts of blobs, each within the size bound (a missing one is null). */
  private async read(blobs: Blob[]): Promise<(string | null)[]> {
    for (const blob of blobs)
      if (blob.size > MAX_PART_BYTES)
        throw new StateDamageError(blob.part, `is larger than ${MAX_PART_BYTES} bytes (${blob.size})`);
    const texts = await catFiles(
      this.repo,
      blobs.map((blob) => blob.oid || ZERO),
    );
    return texts;
  }

  /**
   * The error for a damaged run: which part, where, and how to get its last good version back (the
   * newest earlier version of the ref whose parts all read whole), changing nothing itself.
   */
  private async damaged(run: string, version: string, error: StateDamageError): Promise<Error> {
    const ref = stateRef(run);
    const history = (await git(this.repo, ["rev-list", "--max-count=50", version])).split("\n").slice(1);
    let good: string | null = null;
    for (const candidate of history) {
      const whole = await this.readAt(candidate, run).then(
        () => true,
        () => false,
      );
      if (whole) {
        good = candidate;
        break;
      }
    }
    const where = `${error.part} in ${ref} at ${version.slice(0, 12)}`;
    const restore = good
      ? `go back to its last good version with \`git update-ref ${ref} ${good} ${version}\` (history: \`git log -p ${ref}\`), then run again: what the integration branches merged since that version is taken as merged, not run again`
      : `no earlier version of it is whole: see \`git log -p ${ref}\`, or remove the run with \`git update-ref -d ${ref}\` to start it again`;
    return new StateDamageError(
      error.part,
      `of run ${run} ${error.problem} (${where}): nothing was changed; ${restore}`,
    );
  }

  async compareAndSwap(
    run: string,
    expected: string | null,
    next: RunState,
    touched?: ReadonlySet<string>,
  ): Promise<string | null> {
    const from = knownAt(this.known.get(run), expected);
    // What was read was checked whole: every bucket it holds is there.
    const read = from && {
      ...from.parts,
      bucketTexts: from.parts.bucketTexts as string[],
      members: from.members,
    };
    const parts = nextParts(read, next, LOCAL_PER_TASK, touched);
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
    const message = stateCommitMessage(run, next);
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
