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
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
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
import { type Script, type ScriptedModelServer, startScriptedModel } from "../src/scripted/model-server.ts";
import { graphOf, pushPayload, repository, user } from "./app.ts";
import { CLAUDE_BIN } from "./claude.ts";
import { type FakeStep, FakeGitHub, Redirect, type Reply } from "./fake-github.ts";
import { OrchestratorRuns } from "./orchestrator-runs.ts";
import { runnerStep } from "./runner-process.ts";
import { BareRepoStore } from "./repo-store.ts";

const SECRET = "e2e-webhook-secret";
const APP_LOGIN = "agentrelay[bot]";

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
}

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
  readonly root = mkdtempSync(join(tmpdir(), "agentrelay-e2e-"));
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
  private readonly privateKey: string;
  private pending = new Set<Promise<unknown>>();
  private deliveryCount = 0;
  private nextReplica = 0;
  /** Workflow-only mode: the orchestrator workflow's runs. */
  runs: OrchestratorRuns | null = null;

  constructor(private readonly options: StandinOptions) {
    this.gh = new FakeGitHub(BareRepoStore.create(this.bare));
    this.gh.permissions.set("alice", "admin");
    this.privateKey = generateKeyPairSync("rsa", {
      modulusLength: 2048,
      privateKeyEncoding: { type: "pkcs8", format: "pem" },
      publicKeyEncoding: { type: "spki", format: "pem" },
    }).privateKey;
    this.gh.onDispatch = (dispatch) =>
      this.track(
        options.jobs === "scripted"
          ? this.scriptedJob(dispatch.inputs, dispatch.runId)
          : this.startJob(dispatch.inputs, dispatch.runId),
      );
    if (options.fault) this.gh.fault = options.fault;
    this.gh.onCancel = (runId) => this.jobs.get(runId)?.kill("SIGTERM");
    // The orchestrator workflow merges with GITHUB_TOKEN, whose events start no workflow.
    this.gh.onMerge = (pull) =>
      this.workflowMode ||
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

  async start(): Promise<this> {
    const { publicKey, privateKey } = await generateKeyPair("RS256");
    this.signingKey = privateKey;
    this.jwks = { keys: [{ ...(await exportJWK(publicKey)), kid: "e2e", alg: "RS256", use: "sig" }] };
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
      this.runs = new OrchestratorRuns({
        root: this.root,
        // As the app's replicas here: status edits due at once, writes not paced (the fake has no limits).
        env: () => ({
          GITHUB_API_URL: this.url,
          INPUT_TOKEN: WORKFLOW_TOKEN,
          AGENTRELAY_STATUS_INTERVAL_MS: "0",
          AGENTRELAY_GITHUB_PACING: "off",
        }),
        sha: (event, payload) =>
          event === "push" ? (payload as { after: string }).after : this.gh.branches.get("main")!,
      });
      return this;
    }
    for (let i = 0; i < (this.options.replicas ?? 1); i++) this.replicas.push(await this.startReplica());
    return this;
  }

  get workflowMode(): boolean {
    return this.options.orchestrator === "workflow";
  }

  /** Workflow-only mode: the orchestrator's scheduled run (the reconciler), as cron starts it. */
  schedule(): void {
    this.runs!.trigger("schedule", { schedule: "*/15 * * * *" });
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

  private track(work: Promise<unknown>): void {
    const tracked = work
      .catch((error: unknown) => console.error("stand-in:", error))
      .finally(() => this.pending.delete(tracked));
    this.pending.add(tracked);
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
      { action: "created", issue: { number: issue, body: target.body }, comment: { id: 9000 + issue, body } },
      user(login),
    );
  }

  private async startJob(inputs: Record<string, string>, runId: number): Promise<void> {
    const home = join(this.root, "runners", String(runId));
    const run = this.gh.workflowRuns.get(runId)!;
    run.status = "in_progress";
    const step = runnerStep("dist/action/index.js", home, {
      GITHUB_EVENT_NAME: "workflow_dispatch",
      GITHUB_SERVER_URL: `file://${join(this.root, "remote")}`,
      GITHUB_API_URL: this.url,
      GITHUB_WORKSPACE: join(home, "workspace"),
      RUNNER_TEMP: join(home, "temp"),
      // Jobs here share the machine's network namespace, and run side by side: the egress rules are
      // for a job container's own namespace (test/action/egress-container.test.ts).
      AGENTRELAY_EGRESS: "off",
      ...(this.workflowMode
        ? { INPUT_TOKEN: WORKFLOW_TOKEN, INPUT_TIER: inputs.tier }
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
      AGENTRELAY_ANTHROPIC_CREDENTIAL: "sk-ant-e2e-scripted",
      ANTHROPIC_BASE_URL: this.model.url,
      DISABLE_TELEMETRY: "1",
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
    });
    this.jobs.set(runId, step.child);
    const { code, log } = await step.done;
    this.jobLogs.set(runId, log);
    const output = step.output;
    const report = /^report<<(\S+)\n([\s\S]*?)\n\1$/m.exec(readFileSync(output, "utf8"))?.[2] ?? null;
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
      const zip = zipSync({ [REPORT_FILE]: readFileSync(report) });
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
      { [`notes/${task}.md`]: `task ${task}, attempt ${attempt}\n` },
      task,
    );
    const result = { outcome: "succeeded", noPr: false, reason: null, concerns: [], opsConcerns: [] };
    const report = {
      ...request,
      result: { ...result, summary: `did ${task}`, outputs: [], costUsd: 0.01, turns: 1, gates: [], commit },
    };
    if (app) {
      await this.callApp("/agentrelay/report", report, app.oidc, app.key);
      await this.endRun(runId, "standard", true, null);
      return;
    }
    const file = join(this.root, `report-${runId}.json`);
    writeFileSync(file, JSON.stringify(report));
    await this.endRun(runId, inputs.tier!, true, file);
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
