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
 * Jobs: standin-jobs.ts; the app's replicas: standin-replicas.ts; the repository's CI: standin-ci.ts.
 */
import { execFileSync } from "node:child_process";
import { chmodSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { basename, join, resolve } from "node:path";
import { REPORT_SECRET_VARIABLE } from "../src/protocol/report-key.ts";
import {
  type MessagesRequest,
  type ScriptedModelServer,
  startScriptedModel,
} from "../src/scripted/model-server.ts";
import { pushPayload, repository, user } from "./app.ts";
import { FakeGitHub } from "./fake-github.ts";
import { FakeRepositories } from "./fake-repositories.ts";
import { Redirect, type Reply } from "./fake-reply.ts";
import { orchestrateInProcess, OrchestratorRuns } from "./orchestrator-runs.ts";
import { BareRepoStore, MemoryStore } from "./repo-store.ts";
import { disabledForInactivity } from "./fake-actions.ts";
import { startsWorkflows } from "./fake-events.ts";
import { REPO_ROOT } from "./paths.ts";
import { Timeline } from "./timeline.ts";
import { SCHEDULE_WORKFLOW } from "../src/app/workflow.ts";
import { withRepositoryTriggers } from "../src/cli/commands/orchestrator-triggers.ts";
import { AppReplicas, type Delivery } from "./standin-replicas.ts";
import { WorkflowRepositories } from "./standin-workflow-repositories.ts";
import { ciWorkflow, RepositoryCi } from "./standin-ci.ts";
import { ANTHROPIC_CREDENTIAL, TaskJobs, WORKFLOW_TOKEN } from "./standin-jobs.ts";
import { JobIdentity } from "./standin-oidc.ts";
import { WAIT_MS } from "./patience.ts";
import type { StandinOptions } from "./standin-options.ts";

export type { StandinOptions };

/** Simulated time: a runner picking a job up, a task's job, the schedule's period. */
const PICKUP_MS = 15_000;
const JOB_MS = 10 * 60_000;
const CRON_MS = 15 * 60_000;

const APP_LOGIN = "agentrelay[bot]";

const chmodded = (path: string, mode: number): string => {
  chmodSync(path, mode);
  return path;
};

/** The slug of the registered app the orchestrator workflow may act as. */
const APP_SLUG = "agentrelay-ci";

export class Standin {
  /** The graph's repository, octo/demo. */
  readonly gh: FakeGitHub;
  /** Every repository the stand-in holds (the graph's first) and the app's installations on them. */
  readonly github: FakeRepositories;
  // Open to others, as a runner's work directory is: the jobs' agents run as users of their own.
  readonly root = chmodded(mkdtempSync(join(tmpdir(), "agentrelay-e2e-")), 0o755);
  readonly bare = join(this.root, "remote", "octo", "demo.git");
  url = "";
  /** The app's servers (app mode). */
  readonly replicas = new AppReplicas(this);
  /** The task workflow's runs (standin-jobs.ts). */
  readonly taskJobs: TaskJobs;
  readonly deliveries: Delivery[] = [];
  private server!: Server;
  private model!: ScriptedModelServer;
  /** The jobs' OIDC tokens, which only the app reads. */
  private readonly identity = new JobIdentity();
  private pending = new Set<Promise<unknown>>();
  private deliveryCount = 0;
  /** Ids of the comments people make (GitHub gives each its own: commands are applied once per comment). */
  private commentCount = 0;
  /** Workflow-only mode: the orchestrator workflow's runs (the graph's repository's). */
  runs: OrchestratorRuns | null = null;
  /** Workflow-only mode across repositories: each repository's workflows (standin-workflow-repositories.ts). */
  workflowRepositories: WorkflowRepositories | null = null;
  /** Simulated time, when the options ask for it. */
  readonly timeline: Timeline | null;
  /** The repository's CI on pull requests. */
  readonly ci: RepositoryCi;
  /** Scheduled runs the schedule started, and the ticks it skipped (disabled) or GitHub dropped. */
  readonly cron = { started: 0, disabled: 0, dropped: 0 };

  constructor(private readonly options: StandinOptions) {
    this.gh = new FakeGitHub(options.memory ? new MemoryStore() : BareRepoStore.create(this.bare));
    this.gh.permissions.set("alice", "admin");
    this.github = new FakeRepositories(this.gh);
    for (const { fullName, installation } of options.repositories ?? []) {
      this.github.add(
        fullName,
        installation,
        options.memory
          ? new MemoryStore()
          : BareRepoStore.create(join(this.root, "remote", `${fullName}.git`)),
      );
      // alice pushes the graphs: a run may write only where she may (access.ts requireWriters).
      this.github.collaborator(fullName, "alice", "write");
    }
    this.taskJobs = new TaskJobs(this, options);
    if (this.workflowMode) {
      this.gh.settings.token = options.token ?? "github_token";
      this.gh.settings.appSlug = APP_SLUG;
    }
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
          this.timeline!.at(jobMs, () =>
            this.track(this.taskJobs.runScripted(dispatch.inputs, dispatch.runId)),
          );
        });
        return;
      }
      this.track(
        options.jobs === "scripted"
          ? this.taskJobs.runScripted(dispatch.inputs, dispatch.runId)
          : this.taskJobs.runAction(dispatch.inputs, dispatch.runId),
      );
    };
    // The other repositories' task workflow runs (the workstreams' of a graph that spans repositories).
    for (const gh of this.github.repositories.values())
      if (gh !== this.gh) this.taskJobs.serveRepository(gh, options.jobs ?? "action", (w) => this.track(w));
    // The orchestrator workflow dispatched (a task run's hand-over, or a person): GitHub runs it on
    // the default branch, where its workflow file says whether it listens to workflow_dispatch; any
    // other workflow there runs by its triggers alone (fake-workflows.ts).
    const byTriggers = this.gh.onOtherDispatch;
    this.gh.onOtherDispatch = (workflow, inputs) =>
      (this.runs?.dispatched(workflow, inputs, {
        sender: user("github-actions[bot]", "Bot"),
        installation: { id: this.gh.installationId },
        repository: repository(this.gh),
      }) ??
        false) ||
      byTriggers(workflow, inputs);
    if (options.fault) this.gh.fault = options.fault;
    this.gh.onCancel = (runId) => this.taskJobs.jobs.get(runId)?.kill("SIGTERM");
    // What the orchestrator workflow does with GITHUB_TOKEN starts no workflow.
    this.gh.onMerge = (pull) =>
      (this.workflowMode &&
        startsWorkflows("pull_request", this.gh.settings.token, { action: "closed" }) === "no") ||
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
    if (!this.workflowMode) await this.identity.start();
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
    if (this.workflowMode && this.options.repositories?.length) {
      this.install();
      this.workflowRepositories = new WorkflowRepositories(this.github, this.root, this.gh.settings.token);
      this.runs = this.workflowRepositories.runsOf("octo/demo")!;
      return this;
    }
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
              execute: orchestrateInProcess(this.gh),
              pickup: () => timeline.wait(this.options.simulated!.pickupMs ?? PICKUP_MS),
              now: this.gh.clock.now,
            }
          : {}),
      });
      timeline?.every(CRON_MS, () => this.schedule());
      return this;
    }
    for (let i = 0; i < (this.options.replicas ?? 1); i++)
      this.replicas.list.push(await this.replicas.start());
    return this;
  }

  get modelUrl(): string {
    return this.model.url;
  }

  /** Every Messages API request the scripted model answered. */
  get modelRequests(): readonly MessagesRequest[] {
    return this.model.requests;
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
    if (
      this.gh.settings.disabledWorkflows.has(SCHEDULE_WORKFLOW) ||
      disabledForInactivity(this.gh, SCHEDULE_WORKFLOW)
    ) {
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

  private async serve(req: IncomingMessage): Promise<Reply> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks).toString("utf8");
    const url = new URL(req.url ?? "/", this.url);
    const oidc = this.workflowMode ? null : await this.identity.serve(url, this.url);
    if (oidc) return oidc;
    // The app's job endpoints behind a load balancer: any live replica answers.
    if (url.pathname.startsWith("/agentrelay/")) return this.replicas.balance(req, url, raw);
    // An artifact's archive, where GitHub's download redirects.
    const blob = /^\/_blobs\/artifact-(\d+)$/.exec(url.pathname);
    if (blob) {
      const artifact = this.gh.artifacts.find((a) => a.id === Number(blob[1]));
      return artifact ? [200, Buffer.from(artifact.zip)] : [404, "no such blob"];
    }
    return this.github.serve(
      req.method ?? "GET",
      `${url.pathname}${url.search}`,
      raw ? JSON.parse(raw) : undefined,
      req.headers.accept ?? "",
      req.headers.authorization ?? "",
    );
  }

  /** Requests jobs made to the app's endpoints, with the answer's status. */
  get jobRequests(): { path: string; status: number }[] {
    return this.replicas.jobRequests;
  }

  /** Kills a replica (its in-flight work stops where it is, as in a crash) and starts a fresh one. */
  restartReplica(index = 0): Promise<void> {
    return this.replicas.restart(index);
  }

  /** What the app's periodic sweep does, for the stand-in's repository. */
  reconcile(): Promise<void> {
    return this.replicas.reconcile();
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
  async until(condition: () => boolean, timeoutMs = WAIT_MS): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!condition()) {
      if (Date.now() > deadline) throw new Error(`condition still false after ${timeoutMs} ms`);
      await new Promise((done) => setTimeout(done, 100));
    }
  }

  /** Waits until no job runs and no webhook is in flight. */
  async idle(timeoutMs = WAIT_MS): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (this.pending.size > 0 || (this.workflowRepositories?.busy ?? this.runs?.busy ?? 0) > 0) {
      if (Date.now() > deadline) throw new Error(`stand-in still busy after ${timeoutMs} ms`);
      await Promise.race([...this.pending, new Promise((done) => setTimeout(done, 200))]);
    }
  }

  /** Sends a signed webhook to the app (to one replica, or all), as GitHub delivers it. */
  async webhook(name: string, payload: object, sender: object = user("alice")): Promise<void> {
    const { check_suite: suite, action } = payload as {
      check_suite?: { app?: { slug?: string } };
      action?: string;
    };
    // Workflow-only mode: only what GitHub would start a workflow for (a person's events here; the
    // orchestrator's own are sent only where its token starts workflows).
    if (this.runs && startsWorkflows(name, "person", { checkSuiteApp: suite?.app?.slug, action }) === "no")
      return;
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
      // Each event starts the orchestrator workflow of its repository (a duplicate: twice).
      const place = (delivery.payload as { repository: { full_name: string } }).repository.full_name;
      const runs = this.workflowRepositories?.runsOf(place) ?? this.runs;
      for (let i = fate === "duplicate" ? 2 : 1; i > 0; i--) runs.trigger(name, delivery.payload);
      return;
    }
    const targets = this.options.broadcast ? this.replicas.live() : [this.replicas.next()!];
    const times = fate === "duplicate" ? 2 : 1;
    await Promise.all(
      targets.flatMap((replica) =>
        Array.from({ length: times }, () => this.replicas.post(replica, delivery)),
      ),
    );
  }

  /** Commits files to main (as a person pushing) and sends the push webhook. */
  async push(files: Record<string, string>, message = "Add a graph"): Promise<string> {
    const before = this.gh.branches.get("main")!;
    const after = this.gh.commit("main", files, message);
    await this.webhook("push", pushPayload(this.gh, before, after, { added: Object.keys(files) }));
    return after;
  }

  /** A person presses "Re-run" on a check run: GitHub sends check_run rerequested to the app that made it. */
  async rerun(checkRunId: number, login = "alice"): Promise<void> {
    const { id, name, external_id = null } = this.gh.checkRuns.find((c) => c.id === checkRunId)!;
    const check_run = { id, name, external_id };
    await this.webhook("check_run", { action: "rerequested", check_run }, user(login));
  }

  /**
   * A comment on issue `issue`, held by GitHub (the reconciler may list it) and delivered; `association`:
   * its author's relation to the repository, as GitHub's payload says it.
   */
  async comment(issue: number, body: string, login = "alice", association = "COLLABORATOR"): Promise<void> {
    const target = this.gh.issues.find((i) => i.number === issue)!;
    const id = 9000 + ++this.commentCount;
    const author = user(login);
    const at = this.gh.clock.now();
    this.gh.comments.push({ id, issue, body, app: false, user: author, association, at });
    await this.webhook(
      "issue_comment",
      {
        action: "created",
        issue: { number: issue, body: target.body },
        comment: { id, body, user: author, author_association: association },
      },
      author,
    );
  }

  /** Stops the jobs, the app and the servers; removes the stand-in's files unless `keepFiles`. */
  async close({ keepFiles = false } = {}): Promise<void> {
    const jobs = [...this.taskJobs.jobs.values()].filter((c) => c.exitCode === null && !c.signalCode);
    for (const child of jobs) child.kill("SIGKILL");
    await Promise.all(jobs.map((child) => new Promise((done) => child.once("exit", done))));
    await this.replicas.close();
    this.server.closeAllConnections();
    await new Promise((done) => this.server.close(done));
    await this.model.close();
    if (!keepFiles) removeStandinFiles(this.bare);
    for (const gh of this.github.repositories.values()) gh.expectNoViolations();
  }

  /** git in the bare repository behind the stand-in (its history is what the tests assert). */
  git(...args: string[]): string {
    return execFileSync("git", args, { cwd: this.bare, encoding: "utf8" }).trim();
  }
}

/** Removes a closed stand-in's files: its root, where its bare repository `bare` is three levels down. */
export function removeStandinFiles(bare: string): void {
  const root = resolve(bare, "..", "..", "..");
  try {
    if (basename(root).startsWith("agentrelay-e2e-"))
      rmSync(root, { recursive: true, force: true, maxRetries: 3 });
  } catch {
    // What a killed job's orphans still write there is left to the temporary directory's cleaner.
  }
}

export async function startStandin(options: StandinOptions): Promise<Standin> {
  return new Standin(options).start();
}
