/**
 * The real Probot app behind a real HTTP server on 127.0.0.1, GitHub answered by the fake GitHub
 * through nock, webhooks delivered signed, and jobs simulated the way the Action talks to the app:
 * an OIDC token signed by a locally generated key (served as GitHub's key set), then a report.
 */
import { generateKeyPairSync } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { sign } from "@octokit/webhooks-methods";
import { exportJWK, generateKeyPair, SignJWT } from "jose";
import nock from "nock";
import { Probot } from "probot";
import { agentrelayApp, reconcileAll, reportSecretOf } from "../src/app/index.ts";
import { agentrelayOctokit } from "../src/app/octokit.ts";
import { appRequestHandler } from "../src/app/server.ts";
import { DEFAULT_CONFIG, type AppConfig } from "../src/github/client.ts";
import { REPORT_HOLD_HEADER, REPORT_KEY_HEADER } from "../src/protocol/report.ts";
import { parseRunGraph, type RunSource } from "../src/protocol/run-source.ts";
import { integrationBranch, taskBranch } from "../src/graph/model.ts";
import { oidcVerifier } from "../src/github/oidc.ts";
import { FakeGitHub } from "./fake-github.ts";
import { FakeRepositories } from "./fake-repositories.ts";
import { WAIT_MS } from "./patience.ts";

export const WEBHOOK_SECRET = "webhook-secret-for-tests";
const ISSUER = "https://oidc.agentrelay.test";

export interface Harness {
  gh: FakeGitHub;
  /** Every repository GitHub holds here (the graph's, `gh`, first) and the app's installations. */
  github: FakeRepositories;
  url: string;
  logs: string[];
  deliver(
    name: string,
    payload: object,
    options?: { id?: string; secret?: string; raw?: string },
  ): Promise<number>;
  /** Commits files to main (a graph, its params) and delivers the push; the new commit. */
  pushGraph(path: string, text: string, extra?: Record<string, string>): Promise<string>;
  oidc(claims?: Record<string, unknown>): Promise<string>;
  /** The app's periodic sweep (reconcileAll): every repository of every installation reconciled. */
  reconcile(): Promise<void>;
  call(
    path: string,
    body: unknown,
    token: string | null,
    headers?: Record<string, string>,
  ): Promise<{ status: number; body: Record<string, unknown> }>;
  close(): Promise<void>;
}

/**
 * The keys an app's harness signs with: the OIDC issuer's and the app's own. An RSA key pair takes about
 * a quarter of a CPU-second to generate, and each test file starts an app for nearly every test: the
 * keys are made once per process and shared, since nothing a test does changes them.
 */
let keys:
  Promise<{ jwtPrivate: Parameters<SignJWT["sign"]>[0]; jwk: object; privateKey: string }> | undefined;
function testKeys() {
  keys ??= (async () => {
    const { publicKey, privateKey: jwtPrivate } = await generateKeyPair("RS256");
    const jwk = { ...(await exportJWK(publicKey)), kid: "test-key", alg: "RS256", use: "sig" };
    const { privateKey } = generateKeyPairSync("rsa", {
      modulusLength: 2048,
      privateKeyEncoding: { type: "pkcs8", format: "pem" },
      publicKeyEncoding: { type: "spki", format: "pem" },
    });
    return { jwtPrivate, jwk, privateKey };
  })();
  return keys;
}

/**
 * `transport: "nock"` (tests) intercepts the app's HTTP calls with nock; `"fetch"` (benches) hands
 * the fake GitHub to Octokit as its fetch, so handler latency is measured without any network layer.
 */
/**
 * A repository besides the graph's: on an installation of the app (42 is the graph's) or none, and its
 * collaborators' roles (alice, who pushes the graphs, may write to it unless a test says otherwise).
 */
export interface RepositorySpec {
  fullName: string;
  installation: number | null;
  collaborators?: Record<string, string>;
}

export async function startApp(
  config: Partial<AppConfig> = {},
  transport: "nock" | "fetch" = "nock",
  /** How long the app's writes wait for GitHub's limits (simulated time; as long as needed by default). */
  maxWaitMs = Infinity,
  /** Repositories besides the graph's, each on an installation of the app (42 is the graph's) or none. */
  repositories: RepositorySpec[] = [],
): Promise<Harness> {
  nock.disableNetConnect();
  nock.enableNetConnect("127.0.0.1");
  const gh = new FakeGitHub();
  const github = new FakeRepositories(gh);
  for (const { fullName, installation, collaborators = { alice: "write" } } of repositories) {
    github.add(fullName, installation);
    for (const [login, role] of Object.entries(collaborators)) github.collaborator(fullName, login, role);
  }
  // With one repository, tokens are answered as the one-repository fake answers them.
  if (transport === "nock") (repositories.length > 0 ? github : gh).mount();
  const { jwtPrivate, jwk, privateKey } = await testKeys();
  nock(ISSUER)
    .persist()
    .get("/.well-known/jwks")
    .reply(200, { keys: [jwk] });

  const probot = new Probot({
    appId: 1,
    privateKey,
    secret: WEBHOOK_SECRET,
    logLevel: "fatal",
    // The app's own Octokit (as `npm start` builds it), without waiting on retries in tests.
    Octokit: agentrelayOctokit().defaults((o: object) => ({
      ...o,
      retry: { enabled: false },
      throttle: { enabled: false },
      // GitHub's rate limits, enforced by the fake, are waited out on its clock, however long: no test
      // waits for real.
      pacing: { clock: gh.clock, maxWaitMs },
    })),
    ...(transport === "fetch" ? { request: { fetch: gh.fetch } } : {}),
  });
  const appConfig: AppConfig = { ...DEFAULT_CONFIG, statusIntervalMs: 0, now: gh.clock.now, ...config };
  /** The app's log lines (one per request and delivery). */
  const logs: string[] = [];
  const app = agentrelayApp({
    config: appConfig,
    verify: oidcVerifier({ issuer: ISSUER, audience: appConfig.oidcAudience }),
    reportSecret: reportSecretOf({ PRIVATE_KEY: privateKey }),
  });
  // A delivery is answered once its handler is done, however long a busy machine takes.
  const handler = await appRequestHandler(probot, app, {
    secret: WEBHOOK_SECRET,
    log: (line) => logs.push(line),
    answerWithinMs: WAIT_MS,
  });
  const server: Server = createServer((req, res) => void handler(req, res));
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  let deliveries = 0;

  const harness: Harness = {
    gh,
    github,
    url,
    logs,
    async pushGraph(path, text, extra = {}) {
      const before = gh.branches.get("main")!;
      const after = gh.commit("main", { [path]: text, ...extra }, `add ${path}`);
      const status = await harness.deliver(
        "push",
        pushPayload(gh, before, after, { added: [path, ...Object.keys(extra)] }),
      );
      if (status !== 200) throw new Error(`the push webhook was answered ${status}`);
      return after;
    },
    async deliver(name, payload, options = {}) {
      const body = options.raw ?? JSON.stringify({ installation: { id: gh.installationId }, ...payload });
      const response = await fetch(`${url}/api/github/webhooks`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "x-github-event": name,
          "x-github-delivery": options.id ?? `delivery-${++deliveries}`,
          "x-hub-signature-256": await sign(options.secret ?? WEBHOOK_SECRET, body),
        },
        body,
      });
      await response.text();
      return response.status;
    },
    async oidc(claims = {}) {
      // A job of another repository: GitHub names it, and its task workflow, in the token.
      const where = typeof claims.repository === "string" ? claims.repository : `${gh.owner}/${gh.repo}`;
      return new SignJWT({
        repository: where,
        event_name: "workflow_dispatch",
        job_workflow_ref: `${where}/.github/workflows/${appConfig.taskWorkflow}@refs/heads/main`,
        run_id: "1",
        ...claims,
      })
        .setProtectedHeader({ alg: "RS256", kid: "test-key" })
        .setIssuer(ISSUER)
        .setAudience(appConfig.oidcAudience)
        .setIssuedAt()
        .setExpirationTime("5m")
        .sign(jwtPrivate);
    },
    reconcile: () => reconcileAll(probot, appConfig),
    async call(path, body, token, headers = {}) {
      const response = await fetch(`${url}${path}`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          ...(token ? { authorization: `Bearer ${token}` } : {}),
          ...headers,
        },
        body: typeof body === "string" ? body : JSON.stringify(body),
      });
      return { status: response.status, body: (await response.json()) as Record<string, unknown> };
    },
    async close() {
      // Connections still open are cut: one a test left mid-upload held close() for seconds.
      await new Promise((done) => {
        server.close(done);
        server.closeAllConnections();
      });
      nock.cleanAll();
      nock.enableNetConnect();
      gh.expectNoViolations();
    },
  };
  return harness;
}

/** Webhook payloads of GitHub's shapes (the fields the app reads, plus the usual envelope). */
export function repository(gh: FakeGitHub) {
  return {
    id: 7,
    name: gh.repo,
    full_name: `${gh.owner}/${gh.repo}`,
    private: true,
    owner: { login: gh.owner, id: 9, type: "Organization" },
    default_branch: "main",
    html_url: `https://github.com/${gh.owner}/${gh.repo}`,
  };
}

export const user = (login: string, type: "User" | "Bot" = "User") => ({ login, id: login.length, type });

/** Delivers a comment on an issue (the run's tracking issue unless `issue` says), as GitHub sends it. */
export function issueComment(
  h: Harness,
  body: string,
  login: string,
  options: {
    id?: number;
    type?: "User" | "Bot";
    issue?: { number: number; body: string };
    /** The author's relation to the repository (GitHub's author_association). */
    association?: string;
  } = {},
): Promise<number> {
  const issue = options.issue ?? h.gh.issues[0]!;
  const author = user(login, options.type);
  const id = options.id ?? 77;
  const association = options.association ?? (options.type === "Bot" ? "NONE" : "COLLABORATOR");
  // GitHub holds the comment it delivers (the reconciler may list it later).
  if (!h.gh.comments.some((c) => c.id === id))
    h.gh.comments.push({
      id,
      issue: issue.number,
      body,
      app: false,
      user: author,
      association,
      at: h.gh.clock.now(),
    });
  return h.deliver("issue_comment", {
    action: "created",
    issue: { number: issue.number, body: issue.body },
    comment: { id, body, user: author, author_association: association },
    repository: repository(h.gh),
    sender: author,
  });
}

export function pushPayload(
  gh: FakeGitHub,
  before: string,
  after: string,
  files: { added?: string[]; modified?: string[] },
) {
  return {
    ref: "refs/heads/main",
    before,
    after,
    created: false,
    deleted: false,
    forced: false,
    commits: [
      { id: after, message: "graph", added: files.added ?? [], modified: files.modified ?? [], removed: [] },
    ],
    head_commit: { id: after },
    repository: repository(gh),
    pusher: { name: "alice" },
    sender: user("alice"),
  };
}

// Parsed graphs by text: a stand-in job parses its run's graph once, as the app's engine cache does.
const parsed = new Map<string, ReturnType<typeof parseRunGraph>>();
export function graphOf(source: RunSource): ReturnType<typeof parseRunGraph> {
  const key = `${source.path}\0${JSON.stringify(source.params ?? {})}\0${source.text}`;
  let graph = parsed.get(key);
  if (!graph) {
    if (parsed.size > 8) parsed.clear();
    parsed.set(key, (graph = parseRunGraph(source)));
  }
  return graph;
}

/** The report key header of a token's answer, as the runner sends it with its push-token request and report. */
export const keyOf = (grant: Record<string, unknown>): Record<string, string> => ({
  [REPORT_KEY_HEADER]: String(grant.report_key),
});

type JobResult = Partial<{
  outcome: "succeeded" | "failed";
  reason: string | null;
  concerns: string[];
  noPr: boolean;
  summary: string;
  gates: { n: number; passed: boolean }[];
  gateOutput: string;
  /** What the attempt spent, in micro-dollars. */
  costMicros: number;
  overBudget: boolean;
  /** The runner can hold its report while required checks run (protocol/report.ts, REPORT_HOLD_HEADER). */
  hold: boolean;
  /** The job reports again (its report was held): nothing new is pushed. */
  again: boolean;
}>;

/** A dispatch of the task workflow; `in`: the repository it was made in, when not the graph's. */
type Dispatch = { inputs: Record<string, string>; runId: number; in?: FakeGitHub };

/** Where a job runs (its repository's fake), and what it tells the app of where the run lives. */
function placeOf(h: Harness, dispatch: Dispatch) {
  const at = dispatch.in ?? h.gh;
  const runRepository = at === h.gh ? undefined : dispatch.inputs["run-repository"];
  return { at, claims: at === h.gh ? {} : { repository: `${at.owner}/${at.repo}` }, runRepository };
}

/** A simulated task job's start: its OIDC token, and the attempt's token from the app. */
export async function startJob(
  h: Harness,
  dispatch: Dispatch,
): Promise<{ oidc: string; token: Record<string, unknown> }> {
  const { run, task, attempt } = dispatch.inputs as { run: string; task: string; attempt: string };
  const { claims, runRepository } = placeOf(h, dispatch);
  const oidc = await h.oidc({ run_id: String(dispatch.runId), ...claims });
  const token = await h.call(
    "/agentrelay/token",
    { run, task, attempt: Number(attempt), ...(runRepository ? { repository: runRepository } : {}) },
    oidc,
  );
  if (token.status !== 200) throw new Error(`token refused: ${JSON.stringify(token.body)}`);
  return { oidc, token: token.body };
}

/** A simulated task job's end: a commit pushed to its task branch, and its report. */
export async function finishJob(
  h: Harness,
  dispatch: Dispatch,
  started: { oidc: string; token: Record<string, unknown> },
  result: JobResult = {},
): Promise<{ status: number; body: Record<string, unknown> }> {
  const { run, task, attempt } = dispatch.inputs as { run: string; task: string; attempt: string };
  const { at, runRepository } = placeOf(h, dispatch);
  // The branch the Action checks out: the task's, new from its workstream's integration branch.
  const graph = graphOf(h.gh.runSource(run));
  const branch = taskBranch(graph.name, task);
  const workstream = graph.tasks.find((t) => t.id === task)!.workstreamId;
  if (!at.branches.has(branch)) {
    at.branches.set(branch, at.branches.get(integrationBranch(graph.name, workstream))!);
  }
  const noPr = result.noPr ?? false;
  const commit = noPr
    ? null
    : result.again
      ? at.branches.get(branch)!
      : at.commit(branch, { [`${task}.txt`]: `work of ${task} attempt ${attempt}\n` }, `task ${task}`);
  return h.call(
    "/agentrelay/report",
    {
      run,
      task,
      attempt: Number(attempt),
      ...(runRepository ? { repository: runRepository } : {}),
      result: {
        outcome: result.outcome ?? "succeeded",
        noPr,
        reason: result.reason ?? null,
        concerns: result.concerns ?? [],
        opsConcerns: [],
        summary: result.summary ?? `did ${task}`,
        outputs: [],
        costMicros: result.costMicros ?? 250_000,
        turns: 3,
        gates: result.gates ?? [],
        ...(result.gateOutput ? { gateOutput: result.gateOutput } : {}),
        ...(result.overBudget ? { overBudget: true } : {}),
        commit,
      },
    },
    started.oidc,
    { ...keyOf(started.token), ...(result.hold ? { [REPORT_HOLD_HEADER]: "1" } : {}) },
  );
}

/** A simulated task job: takes its token, pushes a commit to its task branch, reports. */
export async function runJob(
  h: Harness,
  dispatch: Dispatch,
  result: JobResult = {},
): Promise<{ token: Record<string, unknown>; report: { status: number; body: Record<string, unknown> } }> {
  const started = await startJob(h, dispatch);
  const report = await finishJob(h, dispatch, started, result);
  return { token: started.token, report };
}
