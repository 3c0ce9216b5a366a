/**
 * The StateStore on GitHub: each graph's runs live on an orphan branch `agentrelay-state/<graph>`,
 * one folder per run in the layout of protocol/state-layout.ts (an index, task records in buckets,
 * and the pinned graph text, written once), so the stored run is inspectable with git
 * (`git fetch origin agentrelay-state/<graph> && git show FETCH_HEAD:run-1/run.json`).
 *
 * Reads are one GraphQL query (the branch head and the run's files, from that one commit); writes
 * are one GraphQL `createCommitOnBranch` with `expectedHeadOid` = the version read, which GitHub
 * refuses when the branch has moved: a real compare-and-swap. A write carries only the parts that
 * changed: the index, and the buckets of the tasks the round touched. The branch holds no workflow
 * files, so its commits start no runs.
 */
import { runStateDamage } from "./damage.ts";
import { checkRunKey, StateDamageError } from "../protocol/state-check.ts";
import { createHash } from "node:crypto";
import type { Octokit } from "@octokit/rest";
import type { StateStore, Versioned } from "../engine/store.ts";
import type { RunState } from "../engine/types.ts";
import {
  bucketPath,
  HOSTED_PER_TASK,
  knownAt,
  nextParts,
  partsOfRunFiles,
  type StoredParts,
  RUN_FILES,
  stateCommitMessage,
  type RunFiles,
  stateOfParts,
  wholeRunFiles,
} from "../protocol/state-layout.ts";
import { runFolder, type StoredRun } from "../protocol/stored-run.ts";
import { type Entry, StateCache } from "./state-cache.ts";

export const stateBranch = (graph: string): string => `agentrelay-state/${graph}`;

const PER_TASK = HOSTED_PER_TASK;

const READ_RUN = `query($owner: String!, $name: String!, $ref: String!, $dir: String!, $legacy: String!) {
  repository(owner: $owner, name: $name) {
    ref(qualifiedName: $ref) { target { oid ... on Commit { ${RUN_FILES} } } }
  }
}`;

const READ_RUNS = `query($owner: String!, $name: String!, $ref: String!) {
  repository(owner: $owner, name: $name) {
    ref(qualifiedName: $ref) { target { oid ... on Commit { tree { entries { name } } } } }
  }
}`;

export const WRITE = `mutation($input: CreateCommitOnBranchInput!) {
  createCommitOnBranch(input: $input) { commit { oid } }
}`;

interface RunRead {
  repository: { ref: { target: RunFiles & { oid: string } } | null };
}

interface RunsRead {
  repository: { ref: { target: { oid: string; tree: { entries: { name: string }[] } } } | null };
}

/** GitHub's answer when `expectedHeadOid` is no longer the head. */
export const isStale = (error: unknown): boolean => {
  const e = error as { errors?: { type?: string; message?: string }[]; message?: string };
  return (
    (e.errors ?? []).some(
      (x) => x.type === "STALE_DATA" || /expected branch to point to/i.test(x.message ?? ""),
    ) || /expected branch to point to/i.test(e.message ?? "")
  );
};

/** Git's id of a blob with this text, as GitHub names the stored graph file. */
const blobId = (text: string): string => {
  const bytes = Buffer.from(text);
  return createHash("sha1").update(`blob ${bytes.length}\0`).update(bytes).digest("hex");
};

/** The state without its pinned graph text (written once, beside it). */
const withoutGraphText = (state: RunState): RunState => {
  const source = (state as Partial<StoredRun>).source;
  return source ? ({ ...state, source: { ...source, text: undefined } } as RunState) : state;
};

export interface Loaded extends Versioned {
  /** Names the pinned graph's content (its blob id), for caches of what is derived from it. */
  graphKey?: string;
  /** The run's bucket count (0: the earlier one-document format), to name the part a task's record is in. */
  buckets: number;
}

export class GitHubStateStore implements StateStore {
  constructor(
    private readonly octokit: Pick<Octokit, "request">,
    private readonly owner: string,
    private readonly repo: string,
    /** The replica's cache; without one, every load reads GitHub. */
    private readonly cache: StateCache = new StateCache(),
  ) {}

  /**
   * The branch heads this store read, by graph. A store serves one handler: creating a run right after
   * listing the graph's runs starts from that read (a head that moved since makes the write fail).
   */
  private readonly seen = new Map<string, { oid: string; names: Set<string> } | null>();

  /**
   * A GraphQL call whose JSON this store encodes and decodes itself: run documents are large, and
   * Octokit's bigint-aware JSON handling costs several times the plain one on them.
   */
  private async graphql<T>(query: string, variables: Record<string, unknown>): Promise<T> {
    const { data } = await this.octokit.request("POST /graphql", {
      data: JSON.stringify({ query, variables }),
      headers: { "content-type": "application/json; charset=utf-8" },
      request: { parseSuccessResponseBody: false },
    });
    const body = JSON.parse(await new Response(data as ReadableStream).text()) as {
      data?: T;
      errors?: { type?: string; message?: string }[];
    };
    if (body.errors?.length) {
      throw Object.assign(new Error(body.errors.map((e) => e.message).join("; ")), { errors: body.errors });
    }
    return body.data!;
  }

  /** A blob's whole text, by the git blobs API (up to 100 MB; GraphQL cuts texts at 512,000 bytes). */
  private async blobText(oid: string): Promise<string> {
    const { data } = await this.octokit.request("GET /repos/{owner}/{repo}/git/blobs/{file_sha}", {
      owner: this.owner,
      repo: this.repo,
      file_sha: oid,
    });
    return Buffer.from(data.content, "base64").toString("utf8");
  }

  private key(run: string): string {
    return `${this.owner}/${this.repo}/${run}`;
  }

  /** The state of an entry: lent when it is free, else built afresh from the texts. */
  private stateOf(entry: Entry): RunState {
    if (entry.state && !entry.lent) {
      entry.lent = true;
      return entry.state;
    }
    const { buckets, index, bucketTexts } = entry;
    const graphText = entry.graph?.text ?? null;
    return stateOfParts({ buckets, index, bucketTexts, graphText, graphKey: null }, PER_TASK);
  }

  private loaded(entry: Entry, cached: boolean): Loaded {
    return {
      state: this.stateOf(entry),
      version: entry.version,
      buckets: entry.buckets,
      ...(cached ? { cached: true } : {}),
      ...(entry.graph ? { graphKey: entry.graph.key } : {}),
    };
  }

  async load(run: string, options: { fresh?: boolean } = {}): Promise<Loaded | null> {
    const known = options.fresh ? undefined : this.cache.get(this.key(run));
    if (known) return this.loaded(known, true);
    const entry = await this.read(run).catch((error: unknown) => {
      // What this replica remembers of a run whose stored state is now damaged is no longer its state.
      this.cache.forget(this.key(run));
      throw error;
    });
    if (!entry) return null;
    this.cache.set(this.key(run), entry);
    return this.loaded(entry, false);
  }

  /** Reads a run's parts at the branch head, in either format, checked whole (state-check.ts). */
  private async read(run: string): Promise<Entry | null> {
    const { graph, dir, legacy } = runFolder(run);
    const data = await this.graphql<RunRead>(READ_RUN, {
      owner: this.owner,
      name: this.repo,
      ref: `refs/heads/${stateBranch(graph)}`,
      dir,
      legacy,
    });
    const target = data.repository.ref?.target;
    if (!target) return null;
    let parts: StoredParts | null;
    let state: RunState;
    try {
      parts = partsOfRunFiles(await wholeRunFiles(target, (oid) => this.blobText(oid)));
      if (!parts) return null;
      state = stateOfParts(parts, PER_TASK);
      checkRunKey(parts.buckets > 0 ? "run.json" : "the run's document", state, run);
      // A run the app hosts, in folders, keeps the graph it follows beside its index, written once:
      // without it, no handler could read the run's tasks.
      if (parts.buckets > 0 && (state as Partial<StoredRun>).source && parts.graphText === null)
        throw new StateDamageError("graph.yaml", "is missing from the run's directory");
    } catch (error) {
      if (!(error instanceof StateDamageError)) throw error;
      throw this.damage(error, run, target.oid, trackingIssueOf(target));
    }
    return {
      version: target.oid,
      buckets: parts.buckets,
      index: parts.index,
      // Checked whole above: every bucket is there.
      bucketTexts: parts.bucketTexts as string[],
      members: null,
      graph: parts.graphText !== null ? { text: parts.graphText, key: parts.graphKey ?? "" } : null,
      state,
      lent: false,
    };
  }

  /** The located error for damage found in a run read at `version` (damage.ts). */
  damage(error: StateDamageError, run: string, version: string, trackingIssue: number | null): Error {
    const { graph, dir } = runFolder(run);
    return runStateDamage(error, { run, version, trackingIssue }, { dir, branch: stateBranch(graph) });
  }

  /** Numbers of the graph's stored runs (either format). */
  async runNumbers(graph: string): Promise<number[]> {
    const data = await this.graphql<RunsRead>(READ_RUNS, {
      owner: this.owner,
      name: this.repo,
      ref: `refs/heads/${stateBranch(graph)}`,
    });
    const target = data.repository.ref?.target;
    const names = new Set((target?.tree.entries ?? []).map((e) => e.name));
    this.seen.set(graph, target ? { oid: target.oid, names } : null);
    return [...names].flatMap((name) => {
      const m = /^run-(\d+)(\.json)?$/.exec(name);
      return m ? [Number(m[1])] : [];
    });
  }

  async compareAndSwap(
    run: string,
    expected: string | null,
    next: RunState,
    touched?: ReadonlySet<string>,
  ): Promise<string | null> {
    const { graph, dir, legacy } = runFolder(run);
    const from = knownAt(this.cache.get(this.key(run)), expected);
    // The parts to write: the index and the buckets of the tasks the round touched, or all of them
    // (a new run, a resume, a run in the earlier format or one this replica did not read).
    const parts = nextParts(from, next, PER_TASK, touched, withoutGraphText(next));
    const { buckets, bucketTexts, members } = parts;
    const additions = parts.changed.map((b) => ({
      path: `${dir}/${bucketPath(b)}`,
      contents: bucketTexts[b]!,
    }));
    const add = (path: string, text: string) => additions.push({ path: `${dir}/${path}`, contents: text });
    if (!parts.partial || parts.index !== from!.index || additions.length > 0) add("run.json", parts.index);
    // The pinned graph is written with the run, and again only when a resume changed it.
    const graphText = (next as Partial<StoredRun>).source?.text ?? null;
    let graphEntry = from?.graph ?? null;
    if (graphText !== null && (!from || from.buckets === 0 || graphEntry?.text !== graphText)) {
      add("graph.yaml", graphText);
      graphEntry = { text: graphText, key: blobId(graphText) };
    }
    const entry = (version: string): Entry => ({
      version,
      buckets,
      index: parts.index,
      bucketTexts,
      members,
      graph: graphEntry,
      state: next,
      lent: false,
    });

    const seen = this.seen.has(graph) ? this.seen.get(graph)! : undefined;
    this.seen.delete(graph); // the head moves with this write, whatever it answers
    let base = expected;
    if (base === null) {
      // Creating the run: it must not exist yet; the branch may, for the graph's other runs. A new
      // branch is created holding the run, so that the graph's first run costs no extra write.
      let head = seen === undefined ? await this.head(graph) : seen;
      if (!head) {
        const created = await this.createBranch(graph, additions);
        if (created) {
          this.cache.set(this.key(run), entry(created));
          return created;
        }
        head = await this.head(graph); // another writer created it first
        if (!head) return null;
      }
      if (head.names.has(dir) || head.names.has(legacy)) return null;
      base = head.oid;
    }
    try {
      const result = await this.graphql<{ createCommitOnBranch: { commit: { oid: string } } }>(WRITE, {
        input: {
          branch: { repositoryNameWithOwner: `${this.owner}/${this.repo}`, branchName: stateBranch(graph) },
          expectedHeadOid: base,
          message: { headline: stateCommitMessage(run, next) },
          fileChanges: {
            additions: additions.map((a) => ({
              path: a.path,
              contents: Buffer.from(a.contents).toString("base64"),
            })),
            // A run read in the earlier format is rewritten in this one, once.
            ...(from?.buckets === 0 ? { deletions: [{ path: legacy }] } : {}),
          },
        },
      });
      const version = result.createCommitOnBranch.commit.oid;
      this.cache.set(this.key(run), entry(version));
      return version;
    } catch (error) {
      this.cache.forget(this.key(run), expected);
      if (isStale(error)) return null;
      throw error;
    }
  }

  /** Forgets what this replica knows of a run (it was found damaged: the next read is GitHub's). */
  forget(run: string): void {
    this.cache.forget(this.key(run));
  }

  /** A round that wrote nothing gives the state back unchanged: the next handler borrows it again. */
  release(run: string, state: RunState): void {
    const entry = this.cache.get(this.key(run));
    if (entry?.state === state) entry.lent = false;
  }

  private async head(graph: string): Promise<{ oid: string; names: Set<string> } | null> {
    await this.runNumbers(graph);
    return this.seen.get(graph) ?? null;
  }

  /**
   * Creates the orphan state branch with a README and the graph's first run; its commit id, or null
   * when another writer created the branch first.
   */
  private async createBranch(
    graph: string,
    files: { path: string; contents: string }[],
  ): Promise<string | null> {
    const readme = `Run state of the agentrelay graph '${graph}', written by the agentrelay app. Do not edit.\n`;
    const { data: tree } = await this.octokit.request("POST /repos/{owner}/{repo}/git/trees", {
      owner: this.owner,
      repo: this.repo,
      tree: [
        { path: "README.md", mode: "100644", type: "blob", content: readme },
        ...files.map((f) => ({
          path: f.path,
          mode: "100644" as const,
          type: "blob" as const,
          content: f.contents,
        })),
      ],
    });
    const { data: commit } = await this.octokit.request("POST /repos/{owner}/{repo}/git/commits", {
      owner: this.owner,
      repo: this.repo,
      message: `agentrelay: state of ${graph}`,
      tree: tree.sha,
      parents: [],
    });
    try {
      await this.octokit.request("POST /repos/{owner}/{repo}/git/refs", {
        owner: this.owner,
        repo: this.repo,
        ref: `refs/heads/${stateBranch(graph)}`,
        sha: commit.sha,
      });
    } catch (error) {
      // "Reference already exists": someone else created it; the caller reads theirs.
      if ((error as { status?: number }).status === 422) return null;
      throw error;
    }
    return commit.sha;
  }
}

/** The tracking issue a run's record names, if its run.json can still be read that far. */
function trackingIssueOf(files: RunFiles): number | null {
  const index = files.dir?.object?.entries?.find((f) => f.name === "run.json")?.object?.text;
  try {
    const issue = (JSON.parse(index ?? "null") as { github?: { trackingIssue?: unknown } } | null)?.github
      ?.trackingIssue;
    return typeof issue === "number" ? issue : null;
  } catch {
    return null;
  }
}
