/**
 * The StateStore on GitHub: each graph's runs live on an orphan branch `agentrelay-state/<graph>`
 * (`run-<n>.json` per run), so the stored run is inspectable with git
 * (`git fetch origin agentrelay-state/<graph> && git show FETCH_HEAD:run-1.json`).
 *
 * Reads are one GraphQL query (the branch head and its files together); writes are one GraphQL
 * `createCommitOnBranch` with `expectedHeadOid` = the version read, which GitHub refuses when the branch
 * has moved: a real compare-and-swap. The branch holds no workflow files, so its commits start no runs.
 */
import type { Octokit } from "@octokit/rest";
import type { StateStore, Versioned } from "../engine/store.ts";
import type { RunState } from "../engine/types.ts";
import { runDocument } from "../protocol/stored-run.ts";

export const stateBranch = (graph: string): string => `agentrelay-state/${graph}`;

/**
 * What one app replica last read or wrote for each run, with its commit id. A commit id names its
 * content, so this is a cache of facts, never the truth: a write from it is a compare-and-swap on
 * that id, which GitHub refuses once the branch has moved (then the writer reads afresh). With one
 * replica it saves every handler its read; with several it costs a refused write now and then.
 */
export class StateCache {
  private readonly recent = new Map<string, { version: string; text: string }>();

  get(key: string): { version: string; text: string } | undefined {
    return this.recent.get(key);
  }
  set(key: string, version: string, text: string): void {
    this.recent.delete(key);
    this.recent.set(key, { version, text });
    if (this.recent.size > 200) this.recent.delete(this.recent.keys().next().value!);
  }
  forget(key: string): void {
    this.recent.delete(key);
  }
}

const READ = `query($owner: String!, $name: String!, $ref: String!) {
  repository(owner: $owner, name: $name) {
    ref(qualifiedName: $ref) {
      target { oid ... on Commit { tree { entries { name object { ... on Blob { text } } } } } }
    }
  }
}`;

const WRITE = `mutation($input: CreateCommitOnBranchInput!) {
  createCommitOnBranch(input: $input) { commit { oid } }
}`;

interface Head {
  oid: string;
  files: Map<string, string>;
}

interface ReadResult {
  repository: {
    ref: {
      target: { oid: string; tree: { entries: { name: string; object: { text: string | null } | null }[] } };
    } | null;
  };
}

/** GitHub's answer when `expectedHeadOid` is no longer the head. */
const isStale = (error: unknown): boolean => {
  const e = error as { errors?: { type?: string; message?: string }[]; message?: string };
  return (
    (e.errors ?? []).some(
      (x) => x.type === "STALE_DATA" || /expected branch to point to/i.test(x.message ?? ""),
    ) || /expected branch to point to/i.test(e.message ?? "")
  );
};

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
  private readonly seen = new Map<string, Head | null>();

  private async head(graph: string): Promise<Head | null> {
    const data = await this.graphql<ReadResult>(READ, {
      owner: this.owner,
      name: this.repo,
      ref: `refs/heads/${stateBranch(graph)}`,
    });
    const target = data.repository.ref?.target;
    const head = target
      ? { oid: target.oid, files: new Map(target.tree.entries.map((e) => [e.name, e.object?.text ?? ""])) }
      : null;
    this.seen.set(graph, head);
    return head;
  }

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

  private cacheKey(run: string): string {
    return `${this.owner}/${this.repo}/${run}`;
  }

  async load(run: string, options: { fresh?: boolean } = {}): Promise<Versioned | null> {
    const seen = options.fresh ? undefined : this.cache.get(this.cacheKey(run));
    if (seen) return { state: JSON.parse(seen.text) as RunState, version: seen.version, cached: true };
    const { graph, file } = runDocument(run);
    const head = await this.head(graph);
    const text = head?.files.get(file);
    if (!head || text === undefined) return null;
    this.cache.set(this.cacheKey(run), head.oid, text);
    return { state: JSON.parse(text) as RunState, version: head.oid };
  }

  /**
   * Numbers of the graph's stored runs. The latest run's document came with the same read, so it is
   * remembered: the caller that asks for the latest run next reads nothing more.
   */
  async runNumbers(graph: string): Promise<number[]> {
    const head = await this.head(graph);
    const numbers = [...(head?.files.keys() ?? [])].flatMap((name) => {
      const m = /^run-(\d+)\.json$/.exec(name);
      return m ? [Number(m[1])] : [];
    });
    if (head && numbers.length > 0) {
      const latest = `${graph}/${Math.max(...numbers)}`;
      this.cache.set(this.cacheKey(latest), head.oid, head.files.get(runDocument(latest).file)!);
    }
    return numbers;
  }

  async compareAndSwap(run: string, expected: string | null, next: RunState): Promise<string | null> {
    const { graph, file } = runDocument(run);
    const seen = this.seen.has(graph) ? this.seen.get(graph)! : undefined;
    this.seen.delete(graph); // the head moves with this write, whatever it answers
    const text = `${JSON.stringify(next)}\n`;
    const contents = Buffer.from(text).toString("base64");
    let base = expected;
    if (base === null) {
      // Creating the run: it must not exist yet; the branch may, for the graph's other runs. A new
      // branch is created holding the run, so that the graph's first run costs no extra write.
      let head = seen === undefined ? await this.head(graph) : seen;
      if (!head) {
        const created = await this.createBranch(graph, file, text);
        if (created) {
          this.cache.set(this.cacheKey(run), created, text);
          return created;
        }
        head = await this.head(graph); // another writer created it first
        if (!head) return null;
      }
      if (head.files.has(file)) return null;
      base = head.oid;
    }
    try {
      const result = await this.graphql<{ createCommitOnBranch: { commit: { oid: string } } }>(WRITE, {
        input: {
          branch: { repositoryNameWithOwner: `${this.owner}/${this.repo}`, branchName: stateBranch(graph) },
          expectedHeadOid: base,
          message: { headline: `${run}: state ${next.seq}${next.outcome ? ` (${next.outcome})` : ""}` },
          fileChanges: { additions: [{ path: file, contents }] },
        },
      });
      this.cache.set(this.cacheKey(run), result.createCommitOnBranch.commit.oid, text);
      return result.createCommitOnBranch.commit.oid;
    } catch (error) {
      this.cache.forget(this.cacheKey(run));
      if (isStale(error)) return null;
      throw error;
    }
  }

  /**
   * Creates the orphan state branch with a README and the graph's first run document; its commit id,
   * or null when another writer created the branch first.
   */
  private async createBranch(graph: string, file: string, text: string): Promise<string | null> {
    const readme = `Run state of the agentrelay graph '${graph}', written by the agentrelay app. Do not edit.\n`;
    const { data: tree } = await this.octokit.request("POST /repos/{owner}/{repo}/git/trees", {
      owner: this.owner,
      repo: this.repo,
      tree: [
        { path: "README.md", mode: "100644", type: "blob", content: readme },
        { path: file, mode: "100644", type: "blob", content: text },
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
