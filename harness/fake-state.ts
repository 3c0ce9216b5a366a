/**
 * What the fake GitHub holds for its one repository: the branches (in a RepoStore), pull requests,
 * issues and comments, check runs, workflow runs and their artifacts, the repository's settings and
 * the clock its rate limits go by, every request made, and the hooks the end-to-end stand-in listens
 * on. The routes (fake-git-routes.ts, fake-pull-routes.ts, fake-issue-routes.ts, fake-actions.ts,
 * fake-records.ts, fake-graphql.ts) read and change it; fake-github.ts answers requests with them.
 */
import type { RunSource } from "../src/protocol/run-source.ts";
import { createHash } from "node:crypto";
import { HOSTED_PER_TASK, partsOfRunFiles, stateOfParts } from "../src/protocol/state-layout.ts";
import { FakeClock, RateLimits } from "./fake-rate-limits.ts";
import {
  GITHUB_ACTIONS_APP_ID,
  type MergeMethod,
  RepoSettings,
  type TokenKind,
  WORKFLOWS_DIR,
} from "./fake-repo-settings.ts";
import { type Reply, Missing } from "./fake-reply.ts";
import { type BranchMap, MemoryStore, type RepoStore } from "./repo-store.ts";

export interface FakePull {
  number: number;
  head: string;
  base: string;
  title: string;
  body: string;
  state: "open" | "closed";
  merged: boolean;
  /** When set, merging answers 405 (required checks pending) until cleared. */
  checksPending?: boolean;
  /** Set when a merge found conflicts. */
  conflict?: boolean;
  /** The merge queue removed it (fake-merge-queue.ts): why, and its head then. */
  removedFromQueue?: { reason: string; head: string };
  /** When it was merged (the fake's clock); a PR merged by a test without it reads as merged long ago. */
  mergedAt?: number;
  /**
   * The head it merged: a closed PR takes no more commits, so GitHub answers it as its `head.sha` after
   * the branch moves on (https://docs.github.com/en/rest/pulls/pulls#get-a-pull-request).
   */
  mergedHead?: string;
  /**
   * Reads of the PR left before GitHub has computed whether it can merge: `mergeable: null` until
   * then (https://docs.github.com/en/rest/pulls/pulls#get-a-pull-request: "a background job was
   * started to compute it. Give the job a few moments to complete, and then submit the request again").
   */
  computing?: number;
}

/** Which repository a fake holds, and the installation that covers it (octo/demo, 42 by default). */
export interface RepositoryPlace {
  owner?: string;
  repo?: string;
  installationId?: number;
}

/** Who a request's token belongs to. */
export type Requester = "person" | TokenKind;

/** The requester of a request with this Authorization header (`token X`, `Bearer X`). */
export function requesterOf(authorization: string, serverToken: TokenKind): Requester {
  const token = authorization.replace(/^(token|bearer)\s+/i, "");
  return token.startsWith("ghs_") ? serverToken : "person";
}

/** A commit the fake made on a branch: which paths it changed, and when (the fake's clock). */
export interface HistoryEntry {
  sha: string;
  branch: string;
  message: string;
  paths: string[];
  at: number;
}

export interface RecordedCall {
  method: string;
  path: string;
  body: unknown;
  status: number;
}

/** A step of a job, as the jobs of a workflow run list them. */
export interface FakeStep {
  name: string;
  conclusion: "success" | "failure" | "skipped" | "cancelled";
}

export interface FakeArtifact {
  id: number;
  runId: number;
  name: string;
  zip: Uint8Array;
}

/**
 * GraphQL's `Blob.text` holds at most 512,000 bytes; a longer text comes back cut, with `isTruncated:
 * true` (https://docs.github.com/en/graphql/reference/objects#blob; sveltia-cms#950 lost data this
 * way). The whole blob is read by the git blobs API, up to 100 MB
 * (https://docs.github.com/en/rest/git/blobs#get-a-blob).
 */
export const GRAPHQL_BLOB_TEXT_BYTES = 512_000;

export class FakeGitHubState {
  /** The repository this fake holds (octo/demo unless a test of several repositories names another). */
  readonly owner: string;
  /** GitHub's limits the fake enforces; a test that needs one off says so. */
  readonly limits = { blobText: true, requests: true, rate: true };
  /** The time the rate limits go by: real time, moved on by the waits of the app's pacing. */
  readonly clock = new FakeClock();
  /** When the repository was made (its first activity), on the fake's clock. */
  readonly createdAt = this.clock.now();
  /** The repository's settings and rules (merge methods, rulesets, protection, tokens), on by default. */
  readonly settings = new RepoSettings();
  /**
   * GitHub's rate limits as they count this repository's requests: an installation's are shared by
   * every repository the installation covers (fake-repositories.ts makes them one).
   */
  rateLimits = new RateLimits(this.clock.now, () => this.settings.requestsPerHour);
  /**
   * Check runs of the repository's CI (GitHub Actions' own check suites), by commit: what required
   * status checks are read from. Null while the check runs.
   */
  /** CI's check runs; `app`: the app that made one (GitHub Actions' unless said). */
  readonly ciChecks: {
    sha: string;
    name: string;
    conclusion: string | null;
    summary?: string;
    app?: number;
  }[] = [];
  /** Reads of a PR answered `mergeable: null` after a merge found it conflicted (GitHub computing). */
  mergeabilityReads = 1;
  /** The next merges answered 405 "Base branch was modified" (a race GitHub reports so). */
  baseMoves = 0;
  /** Commits made through the git data API, and branches moved through it (as the app pushes). */
  readonly commitsMade: { sha: string; message: string; parents: string[] }[] = [];
  readonly refUpdates: { branch: string; sha: string }[] = [];
  /** Blob texts by id, as the fake has served them (for the git blobs API). */
  readonly blobs = new Map<string, string>();
  readonly repo: string;
  /** The app's installation on this repository (fake-repositories.ts says which cover several). */
  readonly installationId: number;
  /** Trees created through the API, until a commit uses them. */
  readonly trees = new Map<string, Record<string, string | null>>();
  readonly pulls: FakePull[] = [];
  readonly issues: { number: number; title: string; body: string; state: string }[] = [];
  readonly comments: {
    id: number;
    issue: number;
    body: string;
    app: boolean;
    /** A person's comment (the app's own have none), and when it was made and last edited. */
    user?: { login: string; type: string };
    /** The author's relation to the repository, as GitHub says it (OWNER, MEMBER, COLLABORATOR, NONE...). */
    association?: string;
    at?: number;
    updatedAt?: number;
  }[] = [];
  /** The commits the fake made on each branch, oldest first (what the commits API lists). */
  readonly history: HistoryEntry[] = [];
  readonly checkRuns: {
    id: number;
    name: string;
    head_sha: string;
    status: string;
    conclusion: string | null;
    external_id?: string;
    output?: { title: string; summary: string; annotations?: unknown[] };
  }[] = [];
  /** Every workflow_dispatch, with when it was made (on the fake's clock). */
  readonly dispatches: { inputs: Record<string, string>; runId: number; at: number }[] = [];
  readonly workflowRuns = new Map<
    number,
    {
      id: number;
      display_title: string;
      status: string;
      conclusion: string | null;
      /** Where the run comes from, as GitHub gives it (attempt-runs.ts matches runs by them). */
      path?: string;
      event?: string;
      head_branch?: string;
      head_sha?: string;
      head_repository?: { full_name: string };
      created_at?: string;
      /** Who started it, as GitHub names them (a workflow's GITHUB_TOKEN: github-actions[bot]). */
      triggering_actor?: { login: string };
      /** The run's jobs and their steps, once it ran (workflow-only mode reads the report step). */
      jobs?: { name: string; steps: FakeStep[] }[];
    }
  >();
  /** Artifacts uploaded by workflow runs (an upload of a name the run already has fails, as in v4). */
  readonly artifacts: FakeArtifact[] = [];
  readonly tokens: { permissions: Record<string, string>; repositories: string[] }[] = [];
  readonly reactions: { comment: number; content: string }[] = [];
  readonly calls: RecordedCall[] = [];
  /** Requests that GitHub's OpenAPI description does not allow (tests expect none). */
  readonly violations: string[] = [];
  /** Collaborator permission by login (default "read"). */
  readonly permissions = new Map<string, string>();
  /** Whether workflow_dispatch knows `return_run_details` (github.com does; older GHES does not). */
  runDetails = true;
  /** Called for each workflow_dispatch (the end-to-end stand-in starts the job here). */
  onDispatch: (dispatch: { inputs: Record<string, string>; runId: number }) => void = () => undefined;
  /**
   * Called for a workflow_dispatch of another workflow than the task workflow (a task run handing over
   * to the orchestrator workflow): false when that workflow has no workflow_dispatch trigger.
   */
  onOtherDispatch: (workflow: string, inputs: Record<string, string>) => boolean = () => false;
  /** The task workflow's file name (what the orchestrator dispatches). */
  taskWorkflow = "agentrelay-task.yml";
  /**
   * Whose token made the request being answered: a person's (ghp_, gho_, github_pat_, or a token the
   * fake does not know the shape of), or a server-to-server token (ghs_: an installation's, or a
   * workflow's GITHUB_TOKEN, as the settings say the orchestrator holds).
   */
  requester: Requester = "person";
  /** Called when a workflow run is cancelled through the API (the stand-in stops the job). */
  onCancel: (runId: number) => void = () => undefined;
  /** Called when a PR is merged through the API (the stand-in sends the webhook). */
  onMerge: (pull: FakePull) => void = () => undefined;
  /** Called when a PR is opened through the API (the stand-in starts the repository's CI on it). */
  onPullOpened: (pull: FakePull) => void = () => undefined;
  /** Called when a branch is moved through the git data API (a push by the requester's token). */
  onBranchMoved: (branch: string) => void = () => undefined;
  /** Return a reply to fail a request on purpose (5xx, rate limits); null lets it through. */
  fault: (call: { method: string; path: string; body: unknown }) => Reply | null = () => null;
  /**
   * Where ids come from: GitHub's ids (workflow runs, comments, check runs) are unique across
   * repositories, so the repositories of one fake GitHub share this (fake-repositories.ts).
   */
  ids = { next: 1000 };

  /**
   * Whether the request's token may create or change workflow files: a server-to-server token only with
   * the `workflows` permission (GITHUB_TOKEN never), a person's as one with the `workflow` scope
   * (https://docs.github.com/en/apps/oauth-apps/building-oauth-apps/scopes-for-oauth-apps: "Grants
   * the ability to add and update GitHub Actions workflow files"), which `gh auth login` asks for.
   */
  mayChangeWorkflows(): boolean {
    return this.requester === "person" || this.settings.workflowsPermission;
  }

  /** A fresh id for something the fake creates (a run, a comment, a tree). */
  newId(): number {
    return this.ids.next++;
  }

  constructor(
    readonly store: RepoStore = new MemoryStore(),
    place: RepositoryPlace = {},
  ) {
    this.owner = place.owner ?? "octo";
    this.repo = place.repo ?? "demo";
    this.installationId = place.installationId ?? 42;
    if (!this.branches.has("main")) this.commit("main", { "README.md": "# demo\n" }, "initial");
  }

  get branches(): BranchMap {
    return this.store.branches;
  }

  get base(): string {
    return `/repos/${this.owner}/${this.repo}`;
  }

  /** Adds a commit on `branch` with `files` changed (others kept); returns its sha. */
  commit(branch: string, files: Record<string, string | null>, message = "change"): string {
    const sha = this.store.commit(this.branches.get(branch), files, message);
    this.branches.set(branch, sha);
    this.history.push({ sha, branch, message, paths: Object.keys(files), at: this.clock.now() });
    return sha;
  }

  /** The file at the head of `branch`. */
  file(branch: string, path: string): string | undefined {
    return this.branches.has(branch) ? this.store.file(branch, path) : undefined;
  }

  /** Throws when a request broke GitHub's OpenAPI description (every harness checks this on close). */
  expectNoViolations(): void {
    if (this.violations.length > 0)
      throw new Error(`requests GitHub would refuse:\n${this.violations.join("\n")}`);
  }

  /** An open pull request, as if someone had opened it. */
  openPull(number: number, head: string, base = "main"): FakePull {
    const pull: FakePull = { number, head, base, title: head, body: "", state: "open", merged: false };
    this.pulls.push(pull);
    return pull;
  }

  /** An artifact uploaded by run `runId` (upload-artifact v4: a name already uploaded in the run is refused). */
  uploadArtifact(runId: number, name: string, zip: Uint8Array): boolean {
    if (this.artifacts.some((a) => a.runId === runId && a.name === name)) return false;
    this.artifacts.push({ id: this.newId(), runId, name, zip });
    return true;
  }

  /**
   * Records the state of a CI check on a commit (null: it runs), and what its output says; the latest
   * record of a name counts.
   */
  setCheck(sha: string, name: string, conclusion: string | null, summary?: string, app?: number): void {
    const i = this.ciChecks.findIndex((c) => c.sha === sha && c.name === name && c.app === app);
    if (i >= 0) this.ciChecks.splice(i, 1);
    this.ciChecks.push({
      sha,
      name,
      conclusion,
      ...(summary !== undefined ? { summary } : {}),
      ...(app !== undefined ? { app } : {}),
    });
  }

  /** Workflow files a merge of `head` into `base` would create or change on `base`. */
  workflowsChangedBy(base: string | undefined, head: string | undefined): string[] {
    if (!base || !head) return [];
    const probe = this.store.merge(base, head, "probe");
    return probe ? this.workflowsChanged(base, probe) : [];
  }

  /** Workflow files that differ between two commits. */
  workflowsChanged(from: string, to: string): string[] {
    return this.store
      .changed(from, to)
      .map((f) => f.filename)
      .filter((f) => f.startsWith(WORKFLOWS_DIR));
  }

  /** Why a PR cannot merge yet for its required checks (405), or null. */
  requiredChecksRefusal(p: FakePull): string | null {
    if (p.checksPending) return 'Required status check "ci" is expected.';
    const head = this.branches.get(p.head);
    // Strict checks count only on a head up to date with the base (fake-repo-settings.ts, `strict`).
    const [first] = this.settings.requiredChecks(p.base);
    const base = this.branches.get(p.base);
    if (first && head && base && this.settings.strictChecks(p.base) && this.store.aheadBy(head, base) > 0)
      return `Required status check "${first}" is expected.`;
    for (const name of this.settings.requiredChecks(p.base)) {
      // A check bound to an app is satisfied only by that app's check run (fake-repo-settings.ts).
      const bound = this.settings.checkApp(p.base, name);
      const check = this.ciChecks.find(
        (c) =>
          c.sha === head &&
          c.name === name &&
          (bound === undefined || (c.app ?? GITHUB_ACTIONS_APP_ID) === bound),
      );
      if (!check || check.conclusion === null) return `Required status check "${name}" is expected.`;
      if (!["success", "neutral", "skipped"].includes(check.conclusion))
        return `Required status check "${name}" is failing.`;
    }
    return null;
  }

  /** Calls made, as `METHOD path` lines (query strings dropped), for assertions. */
  log(filter?: RegExp): string[] {
    return this.calls
      .map((c) => `${c.method} ${c.path.split("?")[0]}`)
      .filter((l) => !filter || filter.test(l));
  }

  /** The pull request numbered `n`; GitHub answers 404 for one that does not exist. */
  pull(n: string | undefined): FakePull {
    const p = this.pulls.find((x) => x.number === Number(n));
    if (!p) throw new Missing();
    return p;
  }

  /** The head commit of a branch; GitHub answers 404 for a branch that does not exist. */
  branch(name: string): string {
    const sha = this.branches.get(name);
    if (sha === undefined) throw new Missing();
    return sha;
  }

  pr(p: FakePull) {
    const headSha = (p.merged ? p.mergedHead : undefined) ?? this.branches.get(p.head) ?? "0".repeat(40);
    const computing = (p.computing ?? 0) > 0;
    if (computing) p.computing! -= 1;
    return {
      number: p.number,
      node_id: `PR_${p.number}`,
      html_url: `https://github.com/${this.owner}/${this.repo}/pull/${p.number}`,
      state: p.state,
      merged: p.merged,
      merged_at: p.merged ? mergedAtOf(p) : null,
      title: p.title,
      body: p.body,
      mergeable: p.state === "open" && !computing ? !p.checksPending && !p.conflict : null,
      mergeable_state: computing
        ? "unknown"
        : p.conflict
          ? "dirty"
          : p.state === "open" && this.requiredChecksRefusal(p)
            ? "blocked"
            : "clean",
      head: { ref: p.head, sha: headSha },
      base: { ref: p.base },
    };
  }

  /** Merges `head` into `base` as GitHub merges a PR (by `method`); null on a conflict. */
  mergeInto(base: string, head: string, message: string, method: MergeMethod = "merge"): string | null {
    const [to, from] = [this.branches.get(base)!, this.branches.get(head)!];
    const sha =
      method === "squash"
        ? this.store.squash(to, from, message)
        : method === "rebase"
          ? this.store.rebase(to, from)
          : this.store.merge(to, from, message);
    if (sha) this.branches.set(base, sha);
    return sha;
  }

  /** A blob as GraphQL answers it: its text, cut at GRAPHQL_BLOB_TEXT_BYTES, and whether it was. */
  blobObject(text: string): { text: string; isTruncated: boolean } {
    this.blobs.set(blobId(text), text);
    const bytes = Buffer.from(text);
    if (!this.limits.blobText || bytes.length <= GRAPHQL_BLOB_TEXT_BYTES) return { text, isTruncated: false };
    return { text: bytes.subarray(0, GRAPHQL_BLOB_TEXT_BYTES).toString("utf8"), isTruncated: true };
  }

  /** The stored state of a run, as the app wrote it (either layout). */
  state(runKey: string): Record<string, unknown> & {
    tasks: Record<string, { status: string; attempt: number }>;
    outcome: string | null;
  } {
    const [graph, n] = [runKey.slice(0, runKey.lastIndexOf("/")), runKey.slice(runKey.lastIndexOf("/") + 1)];
    const files = this.branches.has(`agentrelay-state/${graph}`)
      ? this.store.files(`agentrelay-state/${graph}`)
      : {};
    const parts = partsOfRunFiles({
      dir: treeAt(files, `run-${n}`),
      legacy: files[`run-${n}.json`] === undefined ? null : { object: { text: files[`run-${n}.json`]! } },
    });
    if (!parts) throw new Error(`no state for ${runKey}`);
    return stateOfParts(parts, HOSTED_PER_TASK) as unknown as ReturnType<FakeGitHubState["state"]>;
  }

  /** What a job reads of its run first: where the graph came from and its text (not the task records). */
  runSource(runKey: string): RunSource {
    const [graph, n] = [runKey.slice(0, runKey.lastIndexOf("/")), runKey.slice(runKey.lastIndexOf("/") + 1)];
    const branch = `agentrelay-state/${graph}`;
    const index = this.file(branch, `run-${n}/run.json`);
    if (index === undefined) return (this.state(runKey) as unknown as { source: RunSource }).source;
    const { source } = JSON.parse(index) as { source: RunSource };
    return { ...source, text: this.file(branch, `run-${n}/graph.yaml`)! };
  }
}

/** The GraphQL shape of the folder `dir` in a commit's files (two levels, as the app asks). */
export function treeAt(
  files: Record<string, string>,
  dir: string,
  blob: (text: string) => { text: string; isTruncated?: boolean } = (text) => ({ text }),
) {
  const below = Object.keys(files).filter((f) => f.startsWith(`${dir}/`));
  if (below.length === 0) return null;
  interface Entry {
    name: string;
    oid?: string;
    object: { text?: string; isTruncated?: boolean; entries?: Entry[] };
  }
  const level = (prefix: string, depth: number): Entry[] => {
    const names = [
      ...new Set(below.filter((f) => f.startsWith(prefix)).map((f) => f.slice(prefix.length).split("/")[0]!)),
    ];
    return names.map((name) => {
      const path = `${prefix}${name}`;
      if (files[path] !== undefined) return { name, oid: blobId(files[path]!), object: blob(files[path]!) };
      return { name, object: depth > 0 ? { entries: level(`${path}/`, depth - 1) } : {} };
    });
  };
  return { object: { entries: level(`${dir}/`, 1) } };
}

/** A merged PR's time as GitHub gives it. */
export const mergedAtOf = (p: FakePull): string =>
  new Date(p.mergedAt ?? Date.parse("2026-01-01T00:00:00Z")).toISOString();

/**
 * The id the fake gives a commit's tree (it keeps no tree objects of its own): a hash of its files, so
 * that two commits with the same files share a tree, as in git (what a check of what landed compares).
 */
export const treeOf = (store: Pick<RepoStore, "files">, commit: string) => {
  const files = store.files(commit);
  const entries = Object.keys(files)
    .sort()
    .map((path) => [path, files[path]]);
  return `tree-${createHash("sha1").update(JSON.stringify(entries)).digest("hex")}`;
};

export const blobId = (text: string) =>
  createHash("sha1")
    .update(`blob ${Buffer.byteLength(text)}\0${text}`)
    .digest("hex");
