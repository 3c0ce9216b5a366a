/**
 * A loopback GitHub for end-to-end runs, backed by a real bare git repository: it serves the REST
 * and GraphQL calls of the app and the Action over HTTP (each checked against GitHub's OpenAPI
 * description), issues Actions OIDC tokens, delivers signed webhooks to the real app servers, and
 * runs each workflow_dispatch by starting the real bundled Action as a child process, with the
 * environment a runner gives it and the real Claude Code CLI against a scripted model server.
 *
 * In workflow-only mode (`orchestrator: "workflow"`) there is no app: each event starts the
 * orchestrator workflow instead (orchestrator-runs.ts), jobs act with their own token and hand their
 * reports over as artifacts of their runs, and what the orchestrator does with GITHUB_TOKEN (its
 * merges) starts no workflow, as on GitHub. Jobs may also be scripted in process (large graphs, or a
 * job a test holds while it acts), in either mode: with the app they take their token and report.
 */
import { type ChildProcess, execFileSync } from "node:child_process";
import { generateKeyPairSync } from "node:crypto";
import {
  chmodSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sign } from "@octokit/webhooks-methods";
import { zipSync } from "fflate";
import { exportJWK, generateKeyPair, SignJWT } from "jose";
import { Probot } from "probot";
import { agentrelayApp, reportSecretOf } from "../src/app/index.ts";
import { REPORT_KEY_HEADER } from "../src/protocol/report.ts";
import { agentrelayOctokit } from "../src/app/octokit.ts";
import { appRequestHandler } from "../src/app/server.ts";
import { reconcileRepository } from "../src/app/reconcile.ts";
import { DEFAULT_CONFIG, type GitHubClient } from "../src/github/client.ts";
import { oidcVerifier } from "../src/github/oidc.ts";
import { REPORT_ARTIFACT, REPORT_STEP } from "../src/github/reports.ts";
import { integrationBranch, taskBranch } from "../src/graph/model.ts";
import { REPORT_FILE } from "../src/protocol/report.ts";
import { REPORT_MAC_FILE, REPORT_SECRET_VARIABLE, reportMac } from "../src/protocol/report-key.ts";
import { type Script, type ScriptedModelServer, startScriptedModel } from "../src/scripted/model-server.ts";
import { graphOf, pushPayload, repository, user } from "./app.ts";
import { CLAUDE_BIN } from "./claude.ts";
import { FakeGitHub } from "./fake-github.ts";
import { Redirect, type Reply } from "./fake-reply.ts";
import type { FakeStep } from "./fake-state.ts";
import { OrchestratorRuns } from "./orchestrator-runs.ts";
import { runnerStep } from "./runner-process.ts";
import { BareRepoStore, MemoryStore } from "./repo-store.ts";
import { startsWorkflows } from "./fake-events.ts";
import type { TokenKind } from "./fake-repo-settings.ts";
import { REPO_ROOT } from "./paths.ts";
import { Timeline } from "./timeline.ts";
import { orchestrate, SCHEDULE_WORKFLOW } from "../src/app/workflow.ts";
import { withRepositoryTriggers } from "../src/cli/commands/orchestrator-triggers.ts";
import { type CiOptions, ciWorkflow, RepositoryCi } from "./standin-ci.ts";

/** Simulated time: a runner picking a job up, a task's job, the schedule's period. */
const PICKUP_MS = 15_000;
const JOB_MS = 10 * 60_000;
const CRON_MS = 15 * 60_000;

const SECRET = "e2e-webhook-secret";
const APP_LOGIN = "agentrelay[bot]";

const chmodded = (path: string, mode: number): string => {
  chmodSync(path, mode);
  return path;
};

export interface Delivery {
  id: string;
  name: string;
  payload: object;
}

export interface StandinOptions {
  script: Script;
  /** App servers (replicas) sharing nothing but GitHub. */
  replicas?: number;
  /** What happens to each webhook: deliver it, drop it, or deliver it twice. */
  route?: (delivery: Delivery) => "deliver" | "drop" | "duplicate";
  /** Every webhook goes to every replica (both handle the same delivery). */
  broadcast?: boolean;
  /** Milliseconds to hold a delivery back (reordering). */
  delay?: (delivery: Delivery) => number;
  /** Fails a GitHub API call on purpose: a reply, or null to let it through. */
  fault?: (call: { method: string; path: string; body: unknown }) => [number, unknown?] | null;
  /** Who orchestrates: the app's replicas (webhooks), or the orchestrator workflow (`init --no-app`). */
  orchestrator?: "app" | "workflow";
  /** Task jobs: the bundled Action with the real CLI (default), or scripted in process (large graphs). */
  jobs?: "action" | "scripted";
  /** A scripted job waits for this once it has started (with the app: its token taken), before it ends. */
  hold?: (inputs: Record<string, string>, runId: number) => Promise<void>;
  /**
   * Simulated time (timeline.ts), for scripted jobs in workflow-only mode: a runner picks each job up
   * after `pickupMs`, a task's job takes `jobMs`, and the orchestrator runs in this process.
   */
  simulated?: { jobMs?: number; pickupMs?: number };
  /** The repository's CI: a workflow that runs on pull requests and reports one check. */
  ci?: CiOptions;
  /** Workflow-only mode: whose token the orchestrator holds (default: the workflow's GITHUB_TOKEN). */
  token?: TokenKind;
  /** The repository in memory instead of a bare git repository (scripted jobs only). */
  memory?: boolean;
  /** The schedule as GitHub runs it: late by `lateMs`, and run `n` dropped when `drop(n)`. */
  schedule?: { lateMs?: number; drop?: (n: number) => boolean };
  /** Files a scripted job commits besides its notes (a job whose token may push them). */
  jobFiles?: (task: string) => Record<string, string>;
  /** A directory put first on the jobs' PATH (programs the runner finds before the machine's). */
  jobPath?: string;
  /** How long a job's runner takes between its steps (the Action's end, the report's upload): 0 by default. */
  betweenStepsMs?: number;
  /** Workflow-only mode: what happens to a job's report between the Action's step and its upload. */
  beforeReportStep?: (reportDir: string) => void;
}

/** The slug of the registered app the orchestrator workflow may act as. */
const APP_SLUG = "agentrelay-ci";

/**
 * A job container's capabilities, as the stand-in's jobs (root here) get them: Docker's default set
 * (moby's oci/caps/defaults.go: no CAP_SYS_ADMIN, so no PID namespace for the attempt's commands)
 * and NET_ADMIN, which the task workflow's container options add.
 */
const JOB_CONTAINER_CAPABILITIES = [
  "audit_write",
  "chown",
  "dac_override",
  "fowner",
  "fsetid",
  "kill",
  "mknod",
  "net_bind_service",
  "net_raw",
  "setfcap",
  "setgid",
  "setpcap",
  "setuid",
  "sys_chroot",
  "net_admin",
];

/** Runs a job's process with a job container's capabilities, where the stand-in is root. */
const asJobContainer = (): string[] =>
  process.getuid?.() === 0
    ? ["setpriv", `--bounding-set=-all,${JOB_CONTAINER_CAPABILITIES.map((c) => `+${c}`).join(",")}`, "--"]
    : [];

/**
 * The secret both the task jobs' step and the orchestrator's hold in workflow-only mode (the
 * workflows name AGENTRELAY_REPORT_SECRET, else the Anthropic credential): the reports' HMAC key.
 */
const ANTHROPIC_CREDENTIAL = "sk-ant-e2e-scripted";

/** The tokens workflow-only mode's jobs hold (the fake GitHub takes any). */
const WORKFLOW_TOKEN = `ghs_${"w".repeat(36)}`;

interface Replica {
  probot: Probot;
  server: Server;
  url: string;
  /** A killed replica's process is gone: its server is closed and it makes no more calls. */
  alive: boolean;
}

export class Standin {
  readonly gh: FakeGitHub;
  // Open to others, as a runner's work directory is: the jobs' agents run as users of their own.
  readonly root = chmodded(mkdtempSync(join(tmpdir(), "agentrelay-e2e-")), 0o755);
  readonly bare = join(this.root, "remote", "octo", "demo.git");
  url = "";
  replicas: Replica[] = [];
  readonly jobs = new Map<number, ChildProcess>();
  readonly jobLogs = new Map<number, string>();
  readonly deliveries: Delivery[] = [];
  /** Requests jobs made to the app's endpoints, with the answer's status. */
  readonly jobRequests: { path: string; status: number }[] = [];
  private server!: Server;
  private model!: ScriptedModelServer;
  private signingKey!: Awaited<ReturnType<typeof generateKeyPair>>["privateKey"];
  private jwks!: object;
  /** The app's private key (app mode only: generating one takes a while). */
  private privateKeyPem?: string;
  private pending = new Set<Promise<unknown>>();
  private deliveryCount = 0;
  /** Ids of the comments people make (GitHub gives each its own: commands are applied once per comment). */
  private commentCount = 0;
  private nextReplica = 0;
  /** Workflow-only mode: the orchestrator workflow's runs. */
  runs: OrchestratorRuns | null = null;
  /** Simulated time, when the options ask for it. */
  readonly timeline: Timeline | null;
  /** The repository's CI on pull requests. */
  readonly ci: RepositoryCi;
  /** Scheduled runs the schedule started, and the ticks it skipped (disabled) or GitHub dropped. */
  readonly cron = { started: 0, disabled: 0, dropped: 0 };

  constructor(private readonly options: StandinOptions) {
    this.gh = new FakeGitHub(options.memory ? new MemoryStore() : BareRepoStore.create(this.bare));
    this.gh.permissions.set("alice", "admin");
    if (this.workflowMode) this.gh.settings.token = options.token ?? "github_token";
    this.timeline = options.simulated
      ? new Timeline(this.gh.clock, () => this.pending.size > 0 || (this.runs?.executing ?? 0) > 0)
      : null;
    this.ci = new RepositoryCi(this, options.ci);
    this.gh.onPullOpened = (pull) => this.ci.start(pull);
    // A push to an open PR's branch (pull_request: synchronize), by the requester's token.
    this.gh.onBranchMoved = (branch) => {
      for (const pull of this.gh.pulls.filter((p) => p.head === branch && p.state === "open"))
        this.ci.start(pull);
    };

    this.gh.onDispatch = (dispatch) => {
      if (this.timeline) {
        const { pickupMs = PICKUP_MS, jobMs = JOB_MS } = options.simulated!;
        this.timeline.at(pickupMs, () => {
          this.gh.workflowRuns.get(dispatch.runId)!.status = "in_progress";
          this.timeline!.at(jobMs, () => this.track(this.scriptedJob(dispatch.inputs, dispatch.runId)));
        });
        return;
      }
      this.track(
        options.jobs === "scripted"
          ? this.scriptedJob(dispatch.inputs, dispatch.runId)
          : this.startJob(dispatch.inputs, dispatch.runId),
      );
    };
    if (options.fault) this.gh.fault = options.fault;
    this.gh.onCancel = (runId) => this.jobs.get(runId)?.kill("SIGTERM");
    // What the orchestrator workflow does with GITHUB_TOKEN starts no workflow.
    this.gh.onMerge = (pull) =>
      (this.workflowMode && startsWorkflows("pull_request", this.gh.settings.token) === "no") ||
      this.track(
        this.webhook("pull_request", {
          action: "closed",
          number: pull.number,
          pull_request: {
            number: pull.number,
            html_url: `https://github.com/octo/demo/pull/${pull.number}`,
            merged: true,
            head: {
              ref: pull.head,
              sha: this.gh.branches.get(pull.head) ?? "0".repeat(40),
              repo: { full_name: "octo/demo" },
            },
            base: { ref: pull.base },
          },
          sender: { login: APP_LOGIN, type: "Bot" },
        }),
      );
  }

  private get privateKey(): string {
    this.privateKeyPem ??= generateKeyPairSync("rsa", {
      modulusLength: 2048,
      privateKeyEncoding: { type: "pkcs8", format: "pem" },
      publicKeyEncoding: { type: "spki", format: "pem" },
    }).privateKey;
    return this.privateKeyPem;
  }

  async start(): Promise<this> {
    // Jobs' OIDC tokens, which only the app reads.
    if (!this.workflowMode) {
      const { publicKey, privateKey } = await generateKeyPair("RS256");
      this.signingKey = privateKey;
      this.jwks = { keys: [{ ...(await exportJWK(publicKey)), kid: "e2e", alg: "RS256", use: "sig" }] };
    }
    this.server = createServer((req, res) => {
      void this.serve(req).then(([status, body, headers = {}]) => {
        if (body instanceof Redirect) {
          res.writeHead(status, { location: `${this.url}${body.location}` }).end();
          return;
        }
        if (Buffer.isBuffer(body)) {
          res.writeHead(status, { "content-type": "application/zip" }).end(body);
          return;
        }
        const text = typeof body === "string";
        res.writeHead(status, { ...headers, "content-type": text ? "text/plain" : "application/json" });
        res.end(status === 204 || body === undefined ? undefined : text ? body : JSON.stringify(body));
      });
    });
    await new Promise<void>((done) => this.server.listen(0, "127.0.0.1", done));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    this.model = await startScriptedModel(this.options.script);
    if (this.workflowMode) {
      this.install();
      const timeline = this.timeline;
      this.runs = new OrchestratorRuns({
        root: this.root,
        // As the app's replicas here: status edits due at once (in real time), plugin-throttling's
        // second between writes off (GitHub's limits are met on the fake's clock in simulated time).
        env: () => ({
          GITHUB_API_URL: this.url,
          GITHUB_REPOSITORY: "octo/demo",
          INPUT_TOKEN: WORKFLOW_TOKEN,
          ...(this.gh.settings.token === "app" ? { "INPUT_APP-SLUG": APP_SLUG } : {}),
          ...(timeline ? {} : { AGENTRELAY_STATUS_INTERVAL_MS: "0" }),
          [REPORT_SECRET_VARIABLE]: ANTHROPIC_CREDENTIAL,
          AGENTRELAY_GITHUB_PACING: "off",
        }),
        sha: (event, payload) =>
          event === "push" ? (payload as { after: string }).after : this.gh.branches.get("main")!,
        workflow: (file) => this.gh.file("main", `.github/workflows/${file}`),
        ...(timeline
          ? {
              execute: (event, payload, env) => this.orchestrateHere(event, payload, env),
              pickup: () => timeline.wait(this.options.simulated!.pickupMs ?? PICKUP_MS),
              now: this.gh.clock.now,
            }
          : {}),
      });
      timeline?.every(CRON_MS, () => this.schedule());
      return this;
    }
    for (let i = 0; i < (this.options.replicas ?? 1); i++) this.replicas.push(await this.startReplica());
    return this;
  }

  get workflowMode(): boolean {
    return this.options.orchestrator === "workflow";
  }

  /**
   * Workflow-only mode: the orchestrator's scheduled run (the reconciler), as cron starts it: not
   * while its workflow is disabled, late or dropped as the options say.
   */
  schedule(): void {
    const n = this.cron.started + this.cron.disabled + this.cron.dropped + 1;
    if (this.gh.settings.disabledWorkflows.has(SCHEDULE_WORKFLOW)) {
      this.cron.disabled++;
      return;
    }
    if (this.options.schedule?.drop?.(n)) {
      this.cron.dropped++;
      return;
    }
    this.cron.started++;
    const start = () => void this.runs!.trigger("schedule", { schedule: "*/15 * * * *" });
    const late = this.options.schedule?.lateMs ?? 0;
    if (late > 0 && this.timeline) this.timeline.at(late, start);
    else start();
  }

  /**
   * Workflow-only mode: the workflows `init --no-app` writes, committed to the default branch (where
   * GitHub reads the workflows events start), with the repository's CI named in the orchestrator's
   * workflow_run trigger; and the CI workflow itself.
   */
  private install(): void {
    const ci = this.options.ci;
    const read = (file: string) => readFileSync(join(REPO_ROOT, "templates/workflows/no-app", file), "utf8");
    const files: Record<string, string> = {
      ".github/workflows/agentrelay.yml": withRepositoryTriggers(read("agentrelay.yml"), {
        defaultBranch: "main",
        ci: ci ? [ci.workflow] : [],
      }),
      ".github/workflows/agentrelay-task.yml": read("agentrelay-task.yml"),
      [`.github/workflows/${SCHEDULE_WORKFLOW}`]: read(SCHEDULE_WORKFLOW),
    };
    if (ci) files[".github/workflows/ci.yml"] = ciWorkflow(ci);
    this.gh.commit("main", files, "Install agentrelay");
  }

  /** The orchestrator in this process (simulated time): its requests go to the fake, on its clock. */
  private async orchestrateHere(event: string, payload: object, env: Record<string, string>) {
    const lines: string[] = [];
    const clock = { now: this.gh.clock.now, sleep: this.gh.clock.sleep };
    try {
      const { failed } = await orchestrate(env, {
        fetch: this.gh.fetch,
        // Each run is a fresh process on GitHub: its write budget starts empty (one per clock object).
        clock: { ...clock },
        log: (line) => lines.push(line),
        event: { name: event, payload: payload as Record<string, unknown> },
      });
      return { code: failed.length > 0 ? 1 : 0, log: [...lines, ...failed].join("\n") };
    } catch (error) {
      return { code: 1, log: [...lines, (error as Error).message].join("\n") };
    }
  }

  private async serve(req: IncomingMessage): Promise<Reply> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks).toString("utf8");
    const url = new URL(req.url ?? "/", this.url);
    if (url.pathname === "/oidc/token") {
      const job = url.searchParams.get("job")!;
      const value = await new SignJWT({
        repository: "octo/demo",
        run_id: job,
        event_name: "workflow_dispatch",
        job_workflow_ref: `octo/demo/.github/workflows/${DEFAULT_CONFIG.taskWorkflow}@refs/heads/main`,
      })
        .setProtectedHeader({ alg: "RS256", kid: "e2e" })
        .setIssuer(`${this.url}/oidc-issuer`)
        .setAudience(url.searchParams.get("audience") ?? "")
        .setIssuedAt()
        .setExpirationTime("10m")
        .sign(this.signingKey);
      return [200, { value }];
    }
    if (url.pathname === "/oidc-issuer/.well-known/jwks") return [200, this.jwks];
    // The app's job endpoints behind a load balancer: any live replica answers.
    if (url.pathname.startsWith("/agentrelay/")) return this.balance(req, url, raw);
    // An artifact's archive, where GitHub's download redirects.
    const blob = /^\/_blobs\/artifact-(\d+)$/.exec(url.pathname);
    if (blob) {
      const artifact = this.gh.artifacts.find((a) => a.id === Number(blob[1]));
      return artifact ? [200, Buffer.from(artifact.zip)] : [404, "no such blob"];
    }
    return this.gh.serve(
      req.method ?? "GET",
      `${url.pathname}${url.search}`,
      raw ? JSON.parse(raw) : undefined,
      req.headers.accept ?? "",
    );
  }

  private async balance(req: IncomingMessage, url: URL, raw: string): Promise<[number, unknown]> {
    const live = this.replicas.filter((r) => r.alive);
    const replica = live[this.nextReplica++ % live.length];
    if (!replica) return [502, { error: "no app replica is up" }];
    const response = await fetch(`${replica.url}${url.pathname}`, {
      method: req.method,
      // A load balancer passes the request's headers on (the runner's report key among them).
      headers: {
        "content-type": "application/json",
        authorization: req.headers.authorization ?? "",
        ...(typeof req.headers[REPORT_KEY_HEADER] === "string"
          ? { [REPORT_KEY_HEADER]: req.headers[REPORT_KEY_HEADER] }
          : {}),
      },
      body: raw,
    }).catch(() => null);
    const answer: [number, unknown] = response
      ? [response.status, await response.json()]
      : [502, { error: "the replica went away" }];
    this.jobRequests.push({ path: url.pathname, status: answer[0] });
    return answer;
  }

  async startReplica(): Promise<Replica> {
    const replica = { alive: true } as Replica;
    const config = { ...DEFAULT_CONFIG, statusIntervalMs: 0, oidcIssuer: `${this.url}/oidc-issuer` };
    const probot = new Probot({
      appId: 1,
      privateKey: this.privateKey,
      secret: SECRET,
      baseUrl: this.url,
      logLevel: "fatal",
      Octokit: agentrelayOctokit({ retryBaseMs: 5 }).defaults((o: object) => ({
        ...o,
        throttle: { enabled: false },
        pacing: { clock: this.gh.clock, maxWaitMs: Infinity },
      })),
      request: {
        fetch: (input: string | URL | Request, init?: RequestInit) =>
          replica.alive
            ? fetch(input, init)
            : Promise.reject(new TypeError("fetch failed: the app process is gone")),
      },
    });
    const app = agentrelayApp({
      config,
      verify: oidcVerifier({ issuer: config.oidcIssuer, audience: config.oidcAudience }),
      // As every replica of the app derives it: from the private key they share.
      reportSecret: reportSecretOf({ PRIVATE_KEY: this.privateKey }),
    });
    const handler = await appRequestHandler(probot, app, { secret: SECRET, log: () => {} });
    const server = createServer((req, res) => void handler(req, res));
    await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
    return Object.assign(replica, {
      probot,
      server,
      url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    });
  }

  /** Kills a replica (its in-flight work stops where it is, as in a crash) and starts a fresh one. */
  async restartReplica(index = 0): Promise<void> {
    const old = this.replicas[index]!;
    old.alive = false;
    old.server.closeAllConnections();
    await new Promise((done) => old.server.close(done));
    this.replicas[index] = await this.startReplica();
  }

  /** What the app's periodic sweep does, for the stand-in's repository. */
  async reconcile(): Promise<void> {
    const octokit = (await this.replicas[0]!.probot.auth(this.gh.installationId)) as unknown as GitHubClient;
    const config = { ...DEFAULT_CONFIG, statusIntervalMs: 0 };
    await reconcileRepository({
      octokit,
      owner: "octo",
      repo: "demo",
      defaultBranch: "main",
      config,
      now: Date.now,
      log: () => undefined,
    });
  }

  track(work: Promise<unknown>): void {
    const tracked = work
      .catch((error: unknown) => console.error("stand-in:", error))
      .finally(() => this.pending.delete(tracked));
    this.pending.add(tracked);
  }

  /** The run's outcome, or null while it runs or before it started. */
  outcome(runKey: string): string | null {
    try {
      return this.gh.state(runKey).outcome;
    } catch {
      return null;
    }
  }

  /** Simulated time: moves the clock on until the run ends (or `forMs` of simulated time passed). */
  async runToEnd(runKey: string, forMs?: number): Promise<string | null> {
    await this.timeline!.run(() => this.outcome(runKey) !== null, forMs);
    return this.outcome(runKey);
  }

  /** Waits until `condition` holds (checked every 100 ms). */
  async until(condition: () => boolean, timeoutMs = 120_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!condition()) {
      if (Date.now() > deadline) throw new Error(`condition still false after ${timeoutMs} ms`);
      await new Promise((done) => setTimeout(done, 100));
    }
  }

  /** Waits until no job runs and no webhook is in flight. */
  async idle(timeoutMs = 180_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (this.pending.size > 0 || (this.runs?.busy ?? 0) > 0) {
      if (Date.now() > deadline) throw new Error(`stand-in still busy after ${timeoutMs} ms`);
      await Promise.race([...this.pending, new Promise((done) => setTimeout(done, 200))]);
    }
  }

  /** Sends a signed webhook to the app (to one replica, or all), as GitHub delivers it. */
  async webhook(name: string, payload: object, sender: object = user("alice")): Promise<void> {
    const suite = (payload as { check_suite?: { app?: { slug?: string } } }).check_suite;
    // Workflow-only mode: only what GitHub would start a workflow for (a person's events here; the
    // orchestrator's own are sent only where its token starts workflows).
    if (this.runs && startsWorkflows(name, "person", { checkSuiteApp: suite?.app?.slug }) === "no") return;
    const delivery: Delivery = {
      id: `delivery-${++this.deliveryCount}`,
      name,
      payload: {
        sender,
        installation: { id: this.gh.installationId },
        repository: repository(this.gh),
        ...payload,
      },
    };
    this.deliveries.push(delivery);
    const fate = this.options.route?.(delivery) ?? "deliver";
    if (fate === "drop") return;
    await new Promise((done) => setImmediate(done));
    const delay = this.options.delay?.(delivery) ?? 0;
    if (delay > 0) await new Promise((done) => setTimeout(done, delay));
    if (this.runs) {
      // Each event starts the orchestrator workflow (a duplicate: twice).
      for (let i = fate === "duplicate" ? 2 : 1; i > 0; i--) this.runs.trigger(name, delivery.payload);
      return;
    }
    const live = this.replicas.filter((r) => r.alive);
    const targets = this.options.broadcast ? live : [live[this.nextReplica++ % live.length]!];
    const times = fate === "duplicate" ? 2 : 1;
    await Promise.all(
      targets.flatMap((replica) => Array.from({ length: times }, () => this.post(replica, delivery))),
    );
  }

  async post(replica: Replica, delivery: Delivery): Promise<number> {
    const body = JSON.stringify(delivery.payload);
    const response = await fetch(`${replica.url}/api/github/webhooks`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "x-github-event": delivery.name,
        "x-github-delivery": delivery.id,
        "x-hub-signature-256": await sign(SECRET, body),
      },
      body,
    }).catch(() => null);
    await response?.text();
    return response?.status ?? 0;
  }

  /** Commits files to main (as a person pushing) and sends the push webhook. */
  async push(files: Record<string, string>, message = "Add a graph"): Promise<string> {
    const before = this.gh.branches.get("main")!;
    const after = this.gh.commit("main", files, message);
    await this.webhook("push", pushPayload(this.gh, before, after, { added: Object.keys(files) }));
    return after;
  }

  async comment(issue: number, body: string, login = "alice"): Promise<void> {
    const target = this.gh.issues.find((i) => i.number === issue)!;
    await this.webhook(
      "issue_comment",
      {
        action: "created",
        issue: { number: issue, body: target.body },
        comment: { id: 9000 + ++this.commentCount, body },
      },
      user(login),
    );
  }

  private async startJob(inputs: Record<string, string>, runId: number): Promise<void> {
    const home = join(this.root, "runners", String(runId));
    const run = this.gh.workflowRuns.get(runId)!;
    run.status = "in_progress";
    const step = runnerStep(
      "dist/action/index.js",
      home,
      {
        ...(this.options.jobPath ? { PATH: `${this.options.jobPath}:${process.env.PATH}` } : {}),
        GITHUB_EVENT_NAME: "workflow_dispatch",
        GITHUB_RUN_ID: String(runId),
        GITHUB_SERVER_URL: `file://${join(this.root, "remote")}`,
        GITHUB_API_URL: this.url,
        GITHUB_WORKSPACE: join(home, "workspace"),
        RUNNER_TEMP: join(home, "temp"),
        // Jobs here share the machine's network namespace, and run side by side: the egress rules are
        // for a job container's own namespace (test/action/egress-container.test.ts).
        AGENTRELAY_EGRESS: "off",
        ...(this.workflowMode
          ? {
              INPUT_TOKEN: WORKFLOW_TOKEN,
              INPUT_TIER: inputs.tier,
              [REPORT_SECRET_VARIABLE]: ANTHROPIC_CREDENTIAL,
            }
          : {
              ACTIONS_ID_TOKEN_REQUEST_URL: `${this.url}/oidc/token?job=${runId}`,
              ACTIONS_ID_TOKEN_REQUEST_TOKEN: "runner-request-token",
              "INPUT_APP-URL": this.url,
            }),
        INPUT_RUN: inputs.run,
        INPUT_TASK: inputs.task,
        INPUT_ATTEMPT: inputs.attempt,
        "INPUT_STATE-VERSION": inputs["state-version"],
        "INPUT_CLAUDE-PATH": CLAUDE_BIN,
        "INPUT_TIMEOUT-MINUTES": "3",
        AGENTRELAY_ANTHROPIC_CREDENTIAL: ANTHROPIC_CREDENTIAL,
        ANTHROPIC_BASE_URL: this.model.url,
        DISABLE_TELEMETRY: "1",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
      },
      asJobContainer(),
    );
    this.jobs.set(runId, step.child);
    const { code, log } = await step.done;
    this.jobLogs.set(runId, log);
    const output = step.output;
    const report = /^report<<(\S+)\n([\s\S]*?)\n\1$/m.exec(readFileSync(output, "utf8"))?.[2] ?? null;
    const pause = this.options.betweenStepsMs ?? 0;
    if (pause > 0) await new Promise((done) => setTimeout(done, pause));
    await this.endRun(runId, inputs.tier ?? "task", code === 0, report);
  }

  /**
   * A task workflow run ends: in workflow-only mode its next step hands the report over (an artifact
   * of the run, refused when the run already has one of that name), then workflow_run is delivered.
   */
  private async endRun(runId: number, job: string, ran: boolean, report: string | null): Promise<void> {
    const run = this.gh.workflowRuns.get(runId)!;
    const steps: FakeStep[] = [{ name: "Run the task", conclusion: ran ? "success" : "failure" }];
    if (this.workflowMode && report !== null && run.status !== "completed") {
      // The report step uploads the directory the Action named (its report and the report's HMAC),
      // or the one file an Action from before the HMAC named.
      this.options.beforeReportStep?.(report);
      const files = statSync(report).isDirectory()
        ? Object.fromEntries(readdirSync(report).map((name) => [name, readFileSync(join(report, name))]))
        : { [REPORT_FILE]: readFileSync(report) };
      const zip = zipSync(files);
      const uploaded = this.gh.uploadArtifact(runId, REPORT_ARTIFACT, zip);
      steps.push({ name: REPORT_STEP, conclusion: uploaded ? "success" : "failure" });
    }
    run.jobs = [{ name: job, steps }];
    if (run.status !== "completed") {
      const ok = steps.every((s) => s.conclusion === "success");
      Object.assign(run, { status: "completed", conclusion: ok ? "success" : "failure" });
    }
    await this.webhook("workflow_run", {
      action: "completed",
      workflow_run: {
        id: runId,
        name: "agentrelay task",
        // Where the run comes from, as GitHub says it (task jobs run on the default branch, the dispatch's ref).
        path: run.path,
        event: run.event,
        head_branch: run.head_branch,
        head_repository: run.head_repository,
        created_at: run.created_at,
        display_title: run.display_title,
        status: "completed",
        conclusion: run.conclusion,
        html_url: `https://github.com/octo/demo/actions/runs/${runId}`,
      },
    });
  }

  /** A job's POST to the app's endpoints, as the Action makes it (through the load balancer). */
  private async callApp(
    path: string,
    body: object,
    oidc: string,
    key?: string,
  ): Promise<Record<string, unknown>> {
    const response = await fetch(`${this.url}${path}`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        authorization: `Bearer ${oidc}`,
        ...(key ? { [REPORT_KEY_HEADER]: key } : {}),
      },
      body: JSON.stringify(body),
    });
    const answer = (await response.json()) as Record<string, unknown>;
    if (!response.ok) throw new Error(`${path} answered ${response.status}: ${String(answer.error)}`);
    return answer;
  }

  /**
   * A scripted job, in process: with the app, it takes the attempt's token with its OIDC token first;
   * then the task's commit pushed to its branch (new from its integration branch), and the report its
   * Action would write (workflow-only mode) or post (with the app).
   */
  private async scriptedJob(inputs: Record<string, string>, runId: number): Promise<void> {
    await new Promise((done) => setTimeout(done, 5));
    const { run: runKey, task, attempt } = inputs as { run: string; task: string; attempt: string };
    this.gh.workflowRuns.get(runId)!.status = "in_progress";
    const request = { run: runKey, task, attempt: Number(attempt) };
    let app: { oidc: string; key: string } | null = null;
    if (!this.workflowMode) {
      const oidc = await fetch(`${this.url}/oidc/token?job=${runId}&audience=${DEFAULT_CONFIG.oidcAudience}`);
      const { value } = (await oidc.json()) as { value: string };
      const grant = await this.callApp("/agentrelay/token", request, value);
      app = { oidc: value, key: String(grant.report_key) };
    }
    await this.options.hold?.(inputs, runId);
    const graph = graphOf(this.gh.runSource(runKey));
    const branch = taskBranch(graph.name, task);
    const workstream = graph.tasks.find((t) => t.id === task)!.workstreamId;
    if (!this.gh.branches.has(branch) || attempt === "1")
      this.gh.branches.set(branch, this.gh.branches.get(integrationBranch(graph.name, workstream))!);
    const commit = this.gh.commit(
      branch,
      { [`notes/${task}.md`]: `task ${task}, attempt ${attempt}\n`, ...this.options.jobFiles?.(task) },
      task,
    );
    const result = { outcome: "succeeded", noPr: false, reason: null, concerns: [], opsConcerns: [] };
    const report = {
      ...request,
      result: {
        ...result,
        summary: `did ${task}`,
        outputs: [],
        costMicros: 10_000,
        turns: 1,
        gates: [],
        commit,
      },
    };
    if (app) {
      await this.callApp("/agentrelay/report", report, app.oidc, app.key);
      await this.endRun(runId, "standard", true, null);
      return;
    }
    const dir = join(this.root, `report-${runId}`);
    mkdirSync(dir);
    const bytes = JSON.stringify(report);
    writeFileSync(join(dir, REPORT_FILE), bytes);
    writeFileSync(join(dir, REPORT_MAC_FILE), reportMac(ANTHROPIC_CREDENTIAL, request, String(runId), bytes));
    await this.endRun(runId, inputs.tier!, true, dir);
  }

  async close(): Promise<void> {
    for (const child of this.jobs.values()) child.kill("SIGKILL");
    for (const replica of this.replicas) {
      replica.server.closeAllConnections();
      await new Promise((done) => replica.server.close(done));
    }
    this.server.closeAllConnections();
    await new Promise((done) => this.server.close(done));
    await this.model.close();
    this.gh.expectNoViolations();
  }

  /** git in the bare repository behind the stand-in (its history is what the tests assert). */
  git(...args: string[]): string {
    return execFileSync("git", args, { cwd: this.bare, encoding: "utf8" }).trim();
  }
}

export async function startStandin(options: StandinOptions): Promise<Standin> {
  return new Standin(options).start();
}
