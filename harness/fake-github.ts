/**
 * A fake GitHub for one repository, in memory: the REST and GraphQL calls the app makes, answered
 * the way GitHub answers them (422 for a ref or PR that already exists, 405 for a merge GitHub
 * refuses, STALE_DATA for a stale `expectedHeadOid`). Every request is recorded, checked against
 * GitHub's OpenAPI description (the committed subset) and may be failed on purpose (faults).
 * Mounted with nock for handler tests, or counted by the API-budget bench.
 */
import type { RunSource } from "../src/protocol/run-source.ts";
import { createHash } from "node:crypto";
import nock from "nock";
import { HOSTED_PER_TASK, partsOfRunFiles, stateOfParts } from "../src/protocol/state-layout.ts";
import { overLimit } from "./fake-limits.ts";
import { folderListing, type HistoryEntry, recordRoutes } from "./fake-records.ts";
import { FakeClock, RateLimits } from "./fake-rate-limits.ts";
import {
  ACTIONS_MAY_NOT_OPEN_PRS,
  type MergeMethod,
  RepoSettings,
  WORKFLOWS_DIR,
  workflowsRefusal,
} from "./fake-repo-settings.ts";
import { actionsRoutes } from "./fake-actions.ts";
import { checkRequest } from "./openapi.ts";
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
  /** When it was merged (the fake's clock); a PR merged by a test without it reads as merged long ago. */
  mergedAt?: number;
  /**
   * Reads of the PR left before GitHub has computed whether it can merge: `mergeable: null` until
   * then (https://docs.github.com/en/rest/pulls/pulls#get-a-pull-request: "a background job was
   * started to compute it. Give the job a few moments to complete, and then submit the request again").
   */
  computing?: number;
}

export interface RecordedCall {
  method: string;
  path: string;
  body: unknown;
  status: number;
}

/** Status, body and headers of an answer. */
export type Reply = [number, unknown?, Record<string, string>?];

/** A redirect GitHub answers with (an artifact's download: 302 to its blob); servers send `Location`. */
export class Redirect {
  constructor(readonly location: string) {}
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
export type Route = (match: RegExpExecArray, body: Record<string, unknown>, query: URLSearchParams) => Reply;

/**
 * GraphQL's `Blob.text` holds at most 512,000 bytes; a longer text comes back cut, with `isTruncated:
 * true` (https://docs.github.com/en/graphql/reference/objects#blob; sveltia-cms#950 lost data this
 * way). The whole blob is read by the git blobs API, up to 100 MB
 * (https://docs.github.com/en/rest/git/blobs#get-a-blob).
 */
export const GRAPHQL_BLOB_TEXT_BYTES = 512_000;

export class FakeGitHub {
  readonly owner = "octo";
  /** GitHub's limits the fake enforces; a test that needs one off says so. */
  readonly limits = { blobText: true, requests: true, rate: true };
  /** The time the rate limits go by: real time, moved on by the waits of the app's pacing. */
  readonly clock = new FakeClock();
  /** The repository's settings and rules (merge methods, rulesets, protection, tokens), on by default. */
  readonly settings = new RepoSettings();
  readonly rateLimits = new RateLimits(this.clock.now, () => this.settings.requestsPerHour);
  /**
   * Check runs of the repository's CI (GitHub Actions' own check suites), by commit: what required
   * status checks are read from. Null while the check runs.
   */
  readonly ciChecks: { sha: string; name: string; conclusion: string | null; summary?: string }[] = [];
  /** Reads of a PR answered `mergeable: null` after a merge found it conflicted (GitHub computing). */
  mergeabilityReads = 1;
  /** The next merges answered 405 "Base branch was modified" (a race GitHub reports so). */
  baseMoves = 0;
  /** Commits made through the git data API, and branches moved through it (as the app pushes). */
  readonly commitsMade: { sha: string; message: string; parents: string[] }[] = [];
  readonly refUpdates: { branch: string; sha: string }[] = [];
  /** Blob texts by id, as the fake has served them (for the git blobs API). */
  private readonly blobs = new Map<string, string>();
  readonly repo = "demo";
  readonly installationId = 42;
  /** Trees created through the API, until a commit uses them. */
  private readonly trees = new Map<string, Record<string, string>>();
  readonly pulls: FakePull[] = [];
  readonly issues: { number: number; title: string; body: string; state: string }[] = [];
  readonly comments: {
    id: number;
    issue: number;
    body: string;
    app: boolean;
    /** A person's comment (the app's own have none), and when it was made and last edited. */
    user?: { login: string; type: string };
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
      head_repository?: { full_name: string };
      created_at?: string;
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
  private nextId = 1000;
  private readonly routes: [string, RegExp, Route][] = [];

  constructor(readonly store: RepoStore = new MemoryStore()) {
    if (!this.branches.has("main")) this.commit("main", { "README.md": "# demo\n" }, "initial");
    this.defineRoutes();
    actionsRoutes(this);
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
    this.artifacts.push({ id: this.nextId++, runId, name, zip });
    return true;
  }

  /**
   * Records the state of a CI check on a commit (null: it runs), and what its output says; the latest
   * record of a name counts.
   */
  setCheck(sha: string, name: string, conclusion: string | null, summary?: string): void {
    const i = this.ciChecks.findIndex((c) => c.sha === sha && c.name === name);
    if (i >= 0) this.ciChecks.splice(i, 1);
    this.ciChecks.push({ sha, name, conclusion, ...(summary !== undefined ? { summary } : {}) });
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
  private requiredChecksRefusal(p: FakePull): string | null {
    if (p.checksPending) return 'Required status check "ci" is expected.';
    const head = this.branches.get(p.head);
    for (const name of this.settings.requiredChecks(p.base)) {
      const check = this.ciChecks.find((c) => c.sha === head && c.name === name);
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

  /** The Accept header of the request being answered (the contents API answers by it). */
  private accept = "";

  handle(method: string, url: string, body: unknown, accept = ""): Reply {
    this.accept = accept;
    const [path = "", search = ""] = url.split("?");
    const call = { method, path: decodeURIComponent(path), body };
    const faulted = this.fault(call) ?? (this.limits.rate ? this.rateLimits.admit(call) : null);
    if (faulted) {
      this.calls.push({ ...call, path: url, status: faulted[0] });
      return faulted;
    }
    const [status, data, headers] = this.answer(method, url, call, search);
    return [status, data, { ...(this.limits.rate ? this.rateLimits.headers() : {}), ...headers }];
  }

  private answer(
    method: string,
    url: string,
    call: { method: string; path: string; body: unknown },
    search: string,
  ): Reply {
    const { body } = call;
    try {
      checkRequest(method, url, body);
    } catch (error) {
      // GitHub answers a malformed request with 422; the test sees it in `violations`.
      this.violations.push((error as Error).message);
      this.calls.push({ ...call, path: url, status: 422 });
      return [422, { message: (error as Error).message }];
    }
    const over = this.limits.requests ? overLimit(method, call.path, body) : null;
    if (over) {
      // The app cuts every text to fit (github/limits.ts): a request past a limit is a defect, seen here.
      this.violations.push(`${method} ${call.path}: ${JSON.stringify(over[1])}`);
      this.calls.push({ ...call, path: url, status: over[0] });
      return over;
    }
    for (const [m, pattern, route] of this.routes) {
      if (m !== method) continue;
      const match = pattern.exec(call.path);
      if (!match) continue;
      const reply = answerMissing(() =>
        route(match, (body ?? {}) as Record<string, unknown>, new URLSearchParams(search)),
      );
      this.calls.push({ ...call, path: url, status: reply[0] });
      return reply;
    }
    // A valid operation on something this fake does not hold (another repository, say).
    this.calls.push({ ...call, path: url, status: 404 });
    return [404, { message: "Not Found" }];
  }

  /**
   * An answer as GitHub gives it, after a turn of the event loop: requests sent together are in flight
   * together, which the concurrency limit counts.
   */
  async serve(method: string, url: string, body: unknown, accept = ""): Promise<Reply> {
    this.rateLimits.inFlight++;
    try {
      await new Promise((resolve) => setImmediate(resolve));
      return this.handle(method, url, body, accept);
    } finally {
      this.rateLimits.inFlight--;
    }
  }

  /** A fetch that answers in process: for clients that take `request.fetch` (no network, no nock). */
  readonly fetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const url = new URL(typeof input === "string" ? input : input instanceof URL ? input.href : input.url);
    const raw = typeof init?.body === "string" ? init.body : "";
    const [status, data, headers] = await this.serve(
      init?.method ?? "GET",
      url.pathname + url.search,
      raw ? JSON.parse(raw) : undefined,
      new Headers(init?.headers).get("accept") ?? "",
    );
    // fetch follows a redirect: here only an artifact's, to its archive.
    if (data instanceof Redirect) {
      const id = Number(/artifact-(\d+)$/.exec(data.location)![1]);
      const zip = this.artifacts.find((a) => a.id === id)!.zip;
      return new Response(zip, { status: 200, headers: { "content-type": "application/zip" } });
    }
    const text = typeof data === "string";
    return new Response(status === 204 || data === undefined ? null : text ? data : JSON.stringify(data), {
      status,
      headers: { ...headers, "content-type": text ? "text/plain" : "application/json" },
    });
  };

  /** Answers api.github.com through nock until `nock.cleanAll()`. */
  mount(origin = "https://api.github.com"): void {
    const scope = nock(origin).persist();
    const serve = this.serve.bind(this);
    for (const method of ["GET", "POST", "PATCH", "PUT", "DELETE"]) {
      scope
        .intercept(() => true, method)
        .reply(async function (this: { req: { headers: Record<string, unknown> } }, uri, body) {
          const parsed = typeof body === "string" ? (body ? JSON.parse(body) : undefined) : body;
          const accept = String(this.req.headers.accept ?? "");
          const [status, data, headers] = await serve(method, uri, parsed, accept);
          return [
            status,
            data === undefined ? "" : typeof data === "string" ? data : JSON.stringify(data),
            { ...headers, "content-type": typeof data === "string" ? "text/plain" : "application/json" },
          ];
        });
    }
  }

  /** Answers `method` on `path` (REPO stands for this repository's API path) with `handler`. */
  route(method: string, path: string, handler: Route): void {
    const pattern = new RegExp(`^${path.replace("REPO", this.base.replace(/\//g, "\\/"))}$`);
    this.routes.push([method, pattern, handler]);
  }

  /** The pull request numbered `n`; GitHub answers 404 for one that does not exist. */
  private pull(n: string | undefined): FakePull {
    const p = this.pulls.find((x) => x.number === Number(n));
    if (!p) throw new Missing();
    return p;
  }

  /** The head commit of a branch; GitHub answers 404 for a branch that does not exist. */
  private branch(name: string): string {
    const sha = this.branches.get(name);
    if (sha === undefined) throw new Missing();
    return sha;
  }

  private pr(p: FakePull) {
    const headSha = this.branches.get(p.head) ?? "0".repeat(40);
    const computing = (p.computing ?? 0) > 0;
    if (computing) p.computing! -= 1;
    return {
      number: p.number,
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
  private mergeInto(
    base: string,
    head: string,
    message: string,
    method: MergeMethod = "merge",
  ): string | null {
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

  private defineRoutes(): void {
    recordRoutes(this, (method, path, handler) => this.route(method, path, handler));
    const issue = (n: number) => this.issues.find((i) => i.number === n);
    this.route("POST", "\\/app\\/installations\\/(\\d+)\\/access_tokens", (_m, body) => {
      this.tokens.push({
        permissions: (body.permissions ?? {}) as Record<string, string>,
        repositories: (body.repositories ?? []) as string[],
      });
      return [
        201,
        {
          token: `ghs_${"x".repeat(36)}${this.tokens.length}`,
          expires_at: "2099-01-01T00:00:00Z",
          permissions: body.permissions ?? { contents: "write" },
        },
      ];
    });
    this.route("GET", "\\/app", () => [200, { id: 1, slug: "agentrelay", name: "agentrelay" }]);
    this.route("GET", "REPO\\/installation", () => [200, { id: this.installationId }]);
    this.route("GET", "REPO\\/contents\\/(.+)", (m, _b, q) => {
      const ref = q.get("ref") ?? "main";
      const known = this.store.isCommit(ref) || this.branches.has(ref);
      const text = known ? this.store.file(ref, m[1]!) : undefined;
      // A folder: its entries (https://docs.github.com/en/rest/repos/contents#get-repository-content).
      const folder =
        known && text === undefined ? folderListing(this.store.files(ref), m[1]!.replace(/\/+$/, "")) : null;
      if (folder) return [200, folder];
      if (text === undefined) return [404, { message: "Not Found" }];
      if (this.accept.includes(".raw")) return [200, text];
      // The JSON form carries files up to 1 MB; past it, `content` is empty and `encoding` "none", and
      // only the raw form has the text, up to 100 MB
      // (https://docs.github.com/en/rest/repos/contents#get-repository-content, "File size limits").
      const size = Buffer.byteLength(text);
      const whole = size <= 1024 * 1024;
      return [
        200,
        {
          type: "file",
          path: m[1],
          size,
          encoding: whole ? "base64" : "none",
          content: whole ? Buffer.from(text).toString("base64") : "",
        },
      ];
    });
    this.route("GET", "REPO\\/branches\\/(.+)", (m) => {
      const sha = this.branches.get(m[1]!);
      return sha
        ? [200, { name: m[1], commit: { sha }, ...this.settings.branchProtection(m[1]!) }]
        : [404, { message: "Branch not found" }];
    });
    this.route("GET", "REPO\\/rules\\/branches\\/(.+)", (m) => [200, this.settings.rulesApi(m[1]!)]);
    this.route("GET", "REPO\\/git\\/ref\\/heads\\/(.+)", (m) => {
      const sha = this.branches.get(m[1]!);
      return sha
        ? [200, { ref: `refs/heads/${m[1]}`, object: { sha, type: "commit" } }]
        : [404, { message: "Not Found" }];
    });
    this.route("GET", "REPO\\/git\\/matching-refs\\/heads\\/(.*)", (m) => [
      200,
      [...this.branches]
        .filter(([b]) => b.startsWith(m[1]!))
        .map(([b, sha]) => ({ ref: `refs/heads/${b}`, object: { sha, type: "commit" } })),
    ]);
    this.route("POST", "REPO\\/git\\/refs", (_m, body) => {
      const name = String(body.ref).replace(/^refs\/heads\//, "");
      if (this.branches.has(name)) return [422, { message: "Reference already exists" }];
      this.branches.set(name, String(body.sha));
      return [201, { ref: body.ref, object: { sha: body.sha } }];
    });
    this.route("DELETE", "REPO\\/git\\/refs\\/heads\\/(.+)", (m) => {
      if (!this.branches.delete(m[1]!)) return [422, { message: "Reference does not exist" }];
      return [204];
    });
    this.route("GET", "REPO\\/git\\/blobs\\/([0-9a-f]{40})", (m) => {
      const text = this.blobs.get(m[1]!);
      return text === undefined
        ? [404, { message: "Not Found" }]
        : [
            200,
            {
              sha: m[1],
              size: Buffer.byteLength(text),
              encoding: "base64",
              content: Buffer.from(text).toString("base64"),
            },
          ];
    });
    this.route("POST", "REPO\\/git\\/trees", (_m, body) => {
      const files = Object.fromEntries(
        (body.tree as { path: string; content: string }[]).map((t) => [t.path, t.content]),
      );
      const sha = `tree${this.nextId++}`;
      this.trees.set(sha, files);
      return [201, { sha }];
    });
    this.route("POST", "REPO\\/git\\/commits", (_m, body) => {
      const parent = (body.parents as string[])[0];
      // A commit with its parent's own tree (treeOf): no change.
      const files = String(body.tree) === treeOf(parent ?? "") ? {} : this.trees.get(String(body.tree))!;
      const sha = this.store.commit(parent, files, String(body.message));
      this.commitsMade.push({ sha, message: String(body.message), parents: body.parents as string[] });
      return [201, { sha }];
    });
    this.route("GET", "REPO\\/git\\/commits\\/([0-9a-f]{40})", (m) =>
      this.store.isCommit(m[1]!)
        ? [200, { sha: m[1], tree: { sha: treeOf(m[1]!) } }]
        : [404, { message: "Not Found" }],
    );
    this.route("PATCH", "REPO\\/git\\/refs\\/heads\\/(.+)", (m, body) => {
      if (!this.branches.has(m[1]!)) return [422, { message: "Reference does not exist" }];
      const workflows = this.settings.workflowsPermission
        ? []
        : this.workflowsChanged(this.branches.get(m[1]!)!, String(body.sha));
      if (workflows.length > 0) return workflowsRefusal(workflows[0]!);
      this.branches.set(m[1]!, String(body.sha));
      this.refUpdates.push({ branch: m[1]!, sha: String(body.sha) });
      this.onBranchMoved(m[1]!);
      return [200, { ref: `refs/heads/${m[1]}`, object: { sha: body.sha, type: "commit" } }];
    });
    this.route("POST", "REPO\\/actions\\/workflows\\/([^/]+)\\/dispatches", (m, body) => {
      if (body.return_run_details !== undefined && !this.runDetails) {
        // GitHub Enterprise Server before the run-details change.
        return [422, { message: 'Invalid request.\n\n"return_run_details" is not a permitted key.' }];
      }
      const inputs = body.inputs as Record<string, string>;
      const runId = this.nextId++;
      this.dispatches.push({ inputs, runId, at: this.clock.now() });
      this.workflowRuns.set(runId, {
        id: runId,
        display_title: `agentrelay ${inputs.run} ${inputs.task} attempt ${inputs.attempt}`,
        status: "queued",
        conclusion: null,
        path: `.github/workflows/${m[1]}`,
        event: "workflow_dispatch",
        head_branch: String(body.ref),
        head_repository: { full_name: `${this.owner}/${this.repo}` },
        created_at: new Date(this.clock.now()).toISOString(),
      });
      this.onDispatch({ inputs, runId });
      return body.return_run_details
        ? [
            200,
            {
              workflow_run_id: runId,
              run_url: `https://api.github.com${this.base}/actions/runs/${runId}`,
              html_url: `https://github.com/${this.owner}/${this.repo}/actions/runs/${runId}`,
            },
          ]
        : [204];
    });
    this.route("GET", "REPO\\/actions\\/workflows\\/([^/]+)\\/runs", () => [
      200,
      { total_count: this.workflowRuns.size, workflow_runs: [...this.workflowRuns.values()].reverse() },
    ]);
    this.route("GET", "REPO\\/actions\\/runs\\/(\\d+)", (m) => {
      const run = this.workflowRuns.get(Number(m[1]));
      return run ? [200, run] : [404, { message: "Not Found" }];
    });
    this.route("GET", "REPO\\/actions\\/runs\\/(\\d+)\\/jobs", (m) => {
      const run = this.workflowRuns.get(Number(m[1]));
      if (!run) return [404, { message: "Not Found" }];
      const jobs = (run.jobs ?? []).map((job, i) => ({
        id: run.id * 10 + i,
        run_id: run.id,
        name: job.name,
        status: run.status,
        conclusion: run.conclusion,
        steps: job.steps.map((step, n) => ({ ...step, number: n + 1, status: "completed" })),
      }));
      return [200, { total_count: jobs.length, jobs }];
    });
    this.route("GET", "REPO\\/actions\\/runs\\/(\\d+)\\/artifacts", (m, _b, q) => {
      const listed = this.artifacts
        .filter((a) => a.runId === Number(m[1]) && (!q.get("name") || a.name === q.get("name")))
        .map((a) => ({ id: a.id, name: a.name, size_in_bytes: a.zip.length, expired: false }));
      return [200, { total_count: listed.length, artifacts: listed }];
    });
    // GitHub answers with a redirect to the archive's blob, which the client follows.
    this.route("GET", "REPO\\/actions\\/artifacts\\/(\\d+)\\/zip", (m) =>
      this.artifacts.some((a) => a.id === Number(m[1]))
        ? [302, new Redirect(`/_blobs/artifact-${m[1]}`)]
        : [404, { message: "Not Found" }],
    );
    this.route("GET", "REPO", () => [
      200,
      {
        name: this.repo,
        full_name: `${this.owner}/${this.repo}`,
        default_branch: "main",
        owner: { login: this.owner },
        allow_merge_commit: this.settings.mergeMethods.merge,
        allow_squash_merge: this.settings.mergeMethods.squash,
        allow_rebase_merge: this.settings.mergeMethods.rebase,
      },
    ]);
    this.route("POST", "REPO\\/actions\\/runs\\/(\\d+)\\/cancel", (m) => {
      const run = this.workflowRuns.get(Number(m[1]));
      if (!run || run.status === "completed")
        return [409, { message: "Cannot cancel a workflow run that is completed." }];
      Object.assign(run, { status: "completed", conclusion: "cancelled" });
      this.onCancel(run.id);
      return [202, {}];
    });
    this.route("POST", "REPO\\/pulls", (_m, body) => {
      const head = String(body.head);
      const base = String(body.base);
      if (this.pulls.some((p) => p.head === head && p.base === base && p.state === "open")) {
        return [
          422,
          {
            message: "Validation Failed",
            errors: [{ message: `A pull request already exists for ${this.owner}:${head}.` }],
          },
        ];
      }
      if (
        this.branches.has(head) &&
        this.branches.has(base) &&
        this.store.aheadBy(this.branches.get(base)!, this.branches.get(head)!) === 0
      ) {
        return [
          422,
          { message: "Validation Failed", errors: [{ message: `No commits between ${base} and ${head}` }] },
        ];
      }
      if (!this.branches.has(head))
        return [422, { message: "Validation Failed", errors: [{ field: "head", code: "invalid" }] }];
      if (this.settings.token === "github_token" && !this.settings.actionsCanCreatePullRequests)
        return [403, { message: ACTIONS_MAY_NOT_OPEN_PRS }];
      const p: FakePull = {
        number: this.issues.length + this.pulls.length + 1,
        head,
        base,
        title: String(body.title),
        body: String(body.body ?? ""),
        state: "open",
        merged: false,
      };
      this.pulls.push(p);
      this.onPullOpened(p);
      return [201, this.pr(p)];
    });
    this.route("GET", "REPO\\/pulls", (_m, _b, q) => {
      const head = q.get("head")?.split(":")[1];
      return [
        200,
        this.pulls
          .filter(
            (p) =>
              (!head || p.head === head) &&
              (!q.get("state") || q.get("state") === "all" || p.state === q.get("state")),
          )
          .map((p) => this.pr(p)),
      ];
    });
    this.route("GET", "REPO\\/pulls\\/(\\d+)", (m) => [200, this.pr(this.pull(m[1]))]);
    this.route("GET", "REPO\\/pulls\\/(\\d+)\\/files", (m) => {
      const p = this.pull(m[1]);
      return [200, this.store.changed(this.branch(p.base), this.branch(p.head))];
    });
    this.route("PATCH", "REPO\\/pulls\\/(\\d+)", (m, body) => {
      const p = this.pull(m[1]);
      if (body.state === "closed" && !p.merged) p.state = "closed";
      return [200, this.pr(p)];
    });
    this.route("PUT", "REPO\\/pulls\\/(\\d+)\\/merge", (m, body) => {
      const p = this.pull(m[1]);
      if (p.merged || p.state !== "open") return [405, { message: "Pull Request is not mergeable" }];
      // `sha`: "SHA that pull request head must match to allow merge"; else 409 "Head branch was
      // modified. Review and try the merge again." (https://docs.github.com/en/rest/pulls/pulls#merge-a-pull-request)
      if (body.sha !== undefined && body.sha !== this.branches.get(p.head))
        return [409, { message: "Head branch was modified. Review and try the merge again." }];
      const method = (body.merge_method ?? "merge") as MergeMethod;
      const refused = this.settings.refusedMethod(method, p.base);
      if (refused) return [405, { message: refused }];
      const checks = this.requiredChecksRefusal(p);
      if (checks) return [405, { message: checks }];
      const workflows = this.settings.workflowsPermission
        ? []
        : this.workflowsChangedBy(this.branches.get(p.base), this.branches.get(p.head));
      if (workflows.length > 0) return workflowsRefusal(workflows[0]!);
      // Another merge landed on the base while this one was being made: GitHub answers 405 "Base branch
      // was modified. Review and try the merge again." (seen in NixOS/nixpkgs-merge-bot#179 and
      // quipper/monorepo-deploy-actions#492, where a retry of the merge succeeds).
      if (this.baseMoves > 0) {
        this.baseMoves--;
        return [405, { message: "Base branch was modified. Review and try the merge again." }];
      }
      const title = String(body.commit_title ?? `Merge #${p.number}`);
      const sha = this.mergeInto(p.base, p.head, title, method);
      if (!sha) {
        p.conflict = true;
        p.computing = this.mergeabilityReads;
        return [405, { message: "Pull Request is not mergeable" }];
      }
      Object.assign(p, { merged: true, state: "closed", mergedAt: this.clock.now() });
      this.onMerge(p);
      return [200, { sha, merged: true, message: "Pull Request successfully merged" }];
    });
    // Merging a branch into another (GitHub's "merge a branch"): 201 with the commit, 204 when `base`
    // already has `head`, 409 on a conflict, 404 for a branch that does not exist.
    this.route("POST", "REPO\\/merges", (_m, body) => {
      const [base, head] = [String(body.base), String(body.head)];
      if (!this.branches.has(base) || !this.branches.has(head)) return [404, { message: "Not Found" }];
      if (this.store.aheadBy(this.branches.get(base)!, this.branches.get(head)!) === 0) return [204];
      const workflows = this.settings.workflowsPermission
        ? []
        : this.workflowsChangedBy(this.branches.get(base), this.branches.get(head));
      if (workflows.length > 0) return workflowsRefusal(workflows[0]!);
      if (this.settings.linearHistory(base))
        // Refused as a ruleset refuses a push of a merge commit (peter-evans/create-pull-request#4428);
        // the status of this API's refusal is not documented: 422 here.
        return [
          422,
          { message: "Repository rule violations found\n\nThis branch must not contain merge commits." },
        ];
      const sha = this.mergeInto(base, head, String(body.commit_message ?? `Merge ${head} into ${base}`));
      return sha ? [201, { sha }] : [409, { message: "Merge conflict" }];
    });
    this.route("GET", "REPO\\/compare\\/(.+)\\.\\.\\.(.+)", (m) => {
      const ahead = this.store.aheadBy(this.branch(m[1]!), this.branch(m[2]!));
      return [
        200,
        {
          ahead_by: ahead,
          behind_by: 0,
          status: ahead ? "ahead" : "identical",
          total_commits: ahead,
          commits: [],
          files: [],
        },
      ];
    });
    this.route("GET", "REPO\\/issues", (_m, _b, q) => [
      200,
      this.issues
        .filter((i) => !q.get("state") || q.get("state") === "all" || i.state === q.get("state"))
        .map((i) => ({ number: i.number, title: i.title, body: i.body, state: i.state })),
    ]);
    this.route("POST", "REPO\\/issues", (_m, body) => {
      const n = this.issues.length + this.pulls.length + 1;
      this.issues.push({
        number: n,
        title: String(body.title),
        body: String(body.body ?? ""),
        state: "open",
      });
      return [201, { number: n, html_url: `https://github.com/${this.owner}/${this.repo}/issues/${n}` }];
    });
    this.route("PATCH", "REPO\\/issues\\/(\\d+)", (m, body) => {
      const i = issue(Number(m[1]));
      if (i && body.state) i.state = String(body.state);
      return [200, { number: Number(m[1]) }];
    });
    this.route("GET", "REPO\\/issues\\/(\\d+)\\/comments", (m) => [
      200,
      this.comments
        .filter((c) => c.issue === Number(m[1]))
        .map((c) => ({
          id: c.id,
          body: c.body,
          performed_via_github_app: c.app ? { slug: "agentrelay" } : null,
        })),
    ]);
    this.route("POST", "REPO\\/issues\\/(\\d+)\\/comments", (m, body) => {
      const at = this.clock.now();
      const c = { id: this.nextId++, issue: Number(m[1]), body: String(body.body), app: true, at };
      this.comments.push(c);
      return [201, { id: c.id }];
    });
    this.route("PATCH", "REPO\\/issues\\/comments\\/(\\d+)", (m, body) => {
      const c = this.comments.find((x) => x.id === Number(m[1]));
      if (!c) return [404, { message: "Not Found" }];
      c.body = String(body.body);
      c.updatedAt = this.clock.now();
      return [200, { id: c.id }];
    });
    this.route("POST", "REPO\\/issues\\/comments\\/(\\d+)\\/reactions", (m, body) => {
      this.reactions.push({ comment: Number(m[1]), content: String(body.content) });
      return [201, { id: this.nextId++ }];
    });
    this.route("GET", "REPO\\/collaborators\\/([^/]+)\\/permission", (m) => [
      200,
      { permission: this.permissions.get(m[1]!) ?? "read", user: { login: m[1] } },
    ]);
    this.route("POST", "REPO\\/check-runs", (_m, body) => {
      const run = { id: this.nextId++, ...(body as object) } as FakeGitHub["checkRuns"][number];
      this.checkRuns.push(run);
      return [201, { id: run.id }];
    });
    this.route("PATCH", "REPO\\/check-runs\\/(\\d+)", (m, body) => {
      const run = this.checkRuns.find((c) => c.id === Number(m[1]))!;
      Object.assign(run, body);
      return [200, { id: run.id }];
    });
    this.route("POST", "\\/graphql", (_m, body) =>
      this.graphql(body as { query: string; variables: Record<string, unknown> }),
    );
  }

  private graphql({ query, variables }: { query: string; variables: Record<string, unknown> }): Reply {
    if (query.includes("createCommitOnBranch")) {
      const input = variables.input as {
        branch: { branchName: string };
        expectedHeadOid: string;
        fileChanges: { additions?: { path: string; contents: string }[]; deletions?: { path: string }[] };
      };
      const head = this.branches.get(input.branch.branchName);
      if (head !== input.expectedHeadOid) {
        return [
          200,
          {
            data: { createCommitOnBranch: null },
            errors: [
              {
                type: "STALE_DATA",
                message: `Expected branch to point to "${input.expectedHeadOid}" but it did not. Pull and try again.`,
              },
            ],
          },
        ];
      }
      const files: Record<string, string | null> = Object.fromEntries(
        (input.fileChanges.additions ?? []).map((a) => [
          a.path,
          Buffer.from(a.contents, "base64").toString("utf8"),
        ]),
      );
      for (const d of input.fileChanges.deletions ?? []) files[d.path] = null;
      const sha = this.commit(input.branch.branchName, files, "state");
      return [200, { data: { createCommitOnBranch: { commit: { oid: sha } } } }];
    }
    // Merged pull requests by head and base branch, newest first (one alias per branch pair; see
    // https://docs.github.com/en/graphql/reference/objects#repository, pullRequests).
    if (query.includes("pullRequests(headRefName:")) {
      const repository: Record<string, unknown> = {};
      for (const m of query.matchAll(/(\w+): pullRequests\(headRefName: \$(\w+), baseRefName: \$(\w+)/g)) {
        const [, alias, head, base] = m as unknown as [string, string, string, string];
        const nodes = this.pulls
          .filter((p) => p.merged && p.head === variables[head] && p.base === variables[base])
          .reverse()
          .slice(0, 1)
          .map((p) => ({ number: p.number, url: this.pr(p).html_url, mergedAt: mergedAtOf(p) }));
        repository[alias] = { nodes };
      }
      return [200, { data: { repository } }];
    }
    // A commit named by id (the task Action), or a branch's head (the app).
    const sha = variables.oid
      ? this.store.isCommit(String(variables.oid))
        ? String(variables.oid)
        : undefined
      : this.branches.get(String(variables.ref).replace(/^refs\/heads\//, ""));
    if (!sha) return [200, { data: { repository: variables.oid ? { object: null } : { ref: null } } }];
    const files = this.store.files(sha);
    const target: Record<string, unknown> = { oid: sha };
    if (query.includes("tree { entries { name } }"))
      target.tree = {
        entries: [...new Set(Object.keys(files).map((f) => f.split("/")[0]!))].map((name) => ({ name })),
      };
    if (query.includes("dir: file(")) {
      target.dir = treeAt(files, String(variables.dir), (text) => this.blobObject(text));
      const legacy = files[String(variables.legacy)];
      target.legacy = legacy === undefined ? null : { oid: blobId(legacy), object: this.blobObject(legacy) };
    }
    return [200, { data: { repository: variables.oid ? { object: target } : { ref: { target } } } }];
  }

  /** A blob as GraphQL answers it: its text, cut at GRAPHQL_BLOB_TEXT_BYTES, and whether it was. */
  private blobObject(text: string): { text: string; isTruncated: boolean } {
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
    return stateOfParts(parts, HOSTED_PER_TASK) as unknown as ReturnType<FakeGitHub["state"]>;
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
function treeAt(
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
const mergedAtOf = (p: FakePull): string =>
  new Date(p.mergedAt ?? Date.parse("2026-01-01T00:00:00Z")).toISOString();

/** The id the fake gives a commit's tree (it keeps no tree objects of its own). */
const treeOf = (commit: string) => `tree-of-${commit}`;

const blobId = (text: string) =>
  createHash("sha1")
    .update(`blob ${Buffer.byteLength(text)}\0${text}`)
    .digest("hex");

/** Thrown by a route for a resource the fake does not hold: answered 404, as GitHub does. */
class Missing extends Error {}

function answerMissing(route: () => Reply): Reply {
  try {
    return route();
  } catch (error) {
    if (error instanceof Missing) return [404, { message: "Not Found" }];
    throw error;
  }
}
