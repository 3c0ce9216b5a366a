/**
 * The HTTP endpoints a task job calls, all authenticated by the job's GitHub Actions OIDC token
 * (so they work whatever the task's token tier):
 * - POST /agentrelay/token: the attempt's installation token, scoped to the repository and the task's
 *   tier. Answered once per attempt: the answer is recorded (job_started) by compare-and-swap before
 *   the token is minted, so a replayed or concurrent request gets nothing.
 * - POST /agentrelay/push-token: a token that can only push, for the runner when it pushes (an attempt
 *   may outlast its first token's hour): only for the job that took the attempt's first token, only
 *   while the attempt runs. The agent never holds the job's OIDC credentials, so it cannot ask.
 * - POST /agentrelay/report: the attempt's result, from the job that took the token.
 * The first token's answer also holds the attempt's report key (HMAC of the attempt and its job under
 * the app's secret, so that any replica can check it without keeping it): push tokens and reports are
 * answered only to a request that carries it. A process in the job that obtains an OIDC token (an
 * agent's leftover, a planted git hook) can no longer take the first token, which is answered once,
 * so it cannot report or push for the attempt.
 * A resolution attempt (protocol/resolution.ts) asks and reports the same way, with the token tier of
 * the task whose agent resolves.
 * A job of a workstream that lives in another repository than the graph (graph `repositories:`) runs
 * there and names the run's repository in its request (`repository`, the dispatch's `run-repository`
 * input): the run is read there, the job's own repository must be the one the graph gives the task's
 * workstream (the OIDC token's `repository` claim, which GitHub sets to the repository the workflow
 * runs in: https://docs.github.com/en/actions/security-for-github-actions/security-hardening-your-deployments/about-security-hardening-with-openid-connect#understanding-the-oidc-token),
 * its tokens reach its own repository only, and `run_token` reads the run's repository and nothing else.
 * The app's private key never leaves the app.
 */
import { RunStateDamageError } from "../github/damage.ts";
import { WriteBudgetSpent } from "../github/write-pacing.ts";
import { createHmac, timingSafeEqual } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Probot } from "probot";
import type { z } from "zod";
import { notAttemptRun } from "../github/attempt-runs.ts";
import { type AppConfig, type GitHubClient, type RepoContext, statusOf } from "../github/client.ts";
import { type Loaded, RunDriver } from "../github/driver.ts";
import type { HostedRun } from "../github/hosted-run.ts";
import { type ActionsIdentity, expectedWorkflowRef, OidcError } from "../github/oidc.ts";
import { tierPermissions } from "../github/tokens.ts";
import {
  type AttemptReport,
  attemptReportSchema,
  type AttemptRequest,
  attemptRequestSchema,
  REPORT_HOLD_HEADER,
  REPORT_HOLD_POLL_MS,
  REPORT_KEY_HEADER,
} from "../protocol/report.ts";
import { factsOfReport, repositoryOfInput, subjectOfInput, tierOfInput } from "../protocol/resolution.ts";
import { recordsOf } from "../engine/conflicts.ts";
import type { EngineEvent } from "../engine/types.ts";

const same = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();

type Subject = NonNullable<ReturnType<typeof subjectOfInput>>;

const MAX_BODY = 1024 * 1024;

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY) throw new HttpError(413, "the request body is too large");
    chunks.push(chunk as Buffer);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString("utf8"));
  } catch {
    throw new HttpError(400, "the request body is not JSON");
  }
}

export interface JobRoutesOptions {
  config: AppConfig;
  /** What attempts' report keys derive from: the same for every replica of the app (see app/index.ts). */
  reportSecret: string;
  verify: (token: string) => Promise<ActionsIdentity>;
  now?: () => number;
}

export function jobRoutes(app: Probot, options: JobRoutesOptions) {
  const now = options.now ?? options.config.now ?? Date.now;
  // Installation ids by repository: a cache of a fact GitHub keeps, not run state.
  const installations = new Map<string, number>();
  /** The app's own client (JWT-signed), only for the calls that need it: it costs a signature. */
  const appClient = async () => (await app.auth()) as unknown as GitHubClient;

  async function repoFor(fullName: string): Promise<{ ctx: RepoContext; installationId: number }> {
    const [owner, repo] = fullName.split("/") as [string, string];
    const cached = fullName.toLowerCase();
    let installationId = installations.get(cached);
    if (installationId === undefined) {
      try {
        installationId = (await (await appClient()).rest.apps.getRepoInstallation({ owner, repo })).data.id;
      } catch (error) {
        if (statusOf(error) === 404) throw new HttpError(403, `the app is not installed on ${fullName}`);
        throw error;
      }
      installations.set(cached, installationId);
    }
    const octokit = (await app.auth(installationId)) as unknown as GitHubClient;
    const ctx: RepoContext = {
      octokit,
      owner,
      repo,
      defaultBranch: "", // not needed here: a run carries the branch it was pushed to (source.branch)
      config: options.config,
      now,
      log: (m) => app.log.info(m),
    };
    return { ctx, installationId };
  }

  /** Identity, request and the run; refuses jobs that are not the task workflow on the default branch. */
  async function authenticate<T extends z.ZodTypeAny>(req: IncomingMessage, schema: T) {
    const header = req.headers.authorization ?? "";
    if (!header.startsWith("Bearer "))
      throw new HttpError(401, "an OIDC token is required (Authorization: Bearer)");
    const body = await readJson(req);
    const identity = await options.verify(header.slice("Bearer ".length)).catch((error: unknown) => {
      throw error instanceof OidcError ? new HttpError(401, error.message) : error;
    });
    const parsed = schema.safeParse(body);
    if (!parsed.success)
      throw new HttpError(
        400,
        `invalid request: ${parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}`,
      );
    const request = parsed.data as z.infer<T> & z.infer<typeof attemptRequestSchema>;
    // The job acts in its own repository (`ctx`); its run may live in the graph's (`request.repository`).
    const { ctx, installationId } = await repoFor(identity.repository);
    const runRepository = request.repository ?? identity.repository;
    const elsewhere = !same(runRepository, identity.repository);
    const home = elsewhere ? await repoFor(runRepository) : { ctx, installationId };
    if (home.installationId !== installationId)
      throw new HttpError(
        403,
        `${identity.repository} and ${runRepository} are in different installations of the app: a run acts through one`,
      );
    const driver = new RunDriver(home.ctx);
    const loaded = await driver.load(request.run);
    if (!loaded) throw new HttpError(404, `no run ${request.run} in ${runRepository}`);
    // The task workflow runs from its repository's default branch: the run's own, or, in another
    // repository, that one's (where the app dispatched it, github/effects.ts).
    const branch = elsewhere
      ? (await ctx.octokit.rest.repos.get({ owner: ctx.owner, repo: ctx.repo })).data.default_branch
      : loaded.run.source.branch;
    const expected = expectedWorkflowRef(identity.repository, options.config.taskWorkflow, branch);
    if (identity.eventName !== "workflow_dispatch" || identity.workflowRef !== expected) {
      throw new HttpError(
        403,
        `only ${expected} started by workflow_dispatch may ask (this job is ${identity.workflowRef}, ${identity.eventName})`,
      );
    }
    const subject = subjectOfInput(loaded.engine.plan, request.task);
    if (!subject) throw new HttpError(404, `no task ${request.task} in run ${request.run}`);
    // A job works only for a workstream of its own repository: GitHub vouches for the job's repository
    // (the OIDC token's `repository` claim), the graph says where each workstream lives.
    const works = repositoryOfInput(loaded.engine.plan, request.task) ?? runRepository;
    if (!same(works, identity.repository))
      throw new HttpError(
        403,
        `${request.task} of run ${request.run} works in ${works}: a job in ${identity.repository} may not take it`,
      );
    return { identity, request, ctx, installationId, driver, subject, loaded, branch, home: home.ctx };
  }

  type Authenticated = Awaited<ReturnType<typeof authenticate<typeof attemptRequestSchema>>>;

  /** The attempt's record in the run: a task's attempt, or a resolution. */
  const recordOf = (run: HostedRun, subject: Subject, attempt: number) => {
    if ("task" in subject) return run.tasks[subject.task]?.attempts[attempt - 1];
    return recordsOf(run, subject.resolution)?.[attempt - 1];
  };

  const notOwnRun = (request: AttemptRequest, dispatched: string, caller: string) =>
    new HttpError(
      403,
      `attempt ${request.attempt} of ${request.task} belongs to workflow run ${dispatched}, not to this job's run ${caller}`,
    );

  /**
   * Only the job GitHub created for the attempt's dispatch may act for it: its run id, once recorded,
   * must be the OIDC token's; until then, the caller's own run must be the attempt's by the rule of
   * github/attempt-runs.ts (this repository's task workflow, dispatched on the run's branch, bearing
   * the attempt's run-name, created after its dispatch). A request from another job changes nothing.
   */
  async function ensureOwnRun(authenticated: Authenticated): Promise<void> {
    const { request, identity, ctx, subject, driver, branch } = authenticated;
    let { loaded } = authenticated;
    // What this replica remembers may predate the dispatch (another replica, or the reconciler, made it).
    if (!recordOf(loaded.run, subject, request.attempt) && loaded.cached)
      loaded = (await driver.load(request.run, { fresh: true })) ?? loaded;
    const record = recordOf(loaded.run, subject, request.attempt);
    if (record?.job) {
      if (record.job !== identity.runId) throw notOwnRun(request, record.job, identity.runId);
      return;
    }
    let why = "GitHub does not know it";
    try {
      const { data } = await ctx.octokit.rest.actions.getWorkflowRun({
        owner: ctx.owner,
        repo: ctx.repo,
        run_id: Number(identity.runId),
      });
      why =
        notAttemptRun(ctx, data, {
          runKey: request.run,
          input: request.task,
          attempt: request.attempt,
          branch,
          record,
        }) ?? "";
    } catch (error) {
      if (statusOf(error) !== 404) throw error;
    }
    if (why)
      throw new HttpError(
        403,
        `this job's run ${identity.runId} was not dispatched for attempt ${request.attempt} of ${request.task} (${why})`,
      );
  }

  /** The report key of an attempt taken by the job `job`. */
  const reportKey = (repository: string, request: AttemptRequest, job: string) =>
    createHmac("sha256", options.reportSecret)
      .update([repository, request.run, request.task, request.attempt, job].join("\n"))
      .digest("base64url");

  /** Refuses a request without the report key of the attempt (only the runner has it). */
  function requireReportKey(
    req: IncomingMessage,
    { identity, request }: { identity: ActionsIdentity; request: AttemptRequest },
  ): void {
    const given = req.headers[REPORT_KEY_HEADER];
    const expected = Buffer.from(reportKey(identity.repository, request, identity.runId));
    if (
      typeof given !== "string" ||
      given.length !== expected.length ||
      !timingSafeEqual(Buffer.from(given), expected)
    )
      throw new HttpError(
        403,
        `this request does not carry the report key of attempt ${request.attempt} of ${request.task}: only the runner that took the attempt's first token may push or report`,
      );
  }

  /** An installation token for the one repository, with exactly these permissions. */
  const mint = async (installationId: number, repo: string, permissions: Record<string, string>) =>
    (
      await (
        await appClient()
      ).rest.apps.createInstallationAccessToken({
        installation_id: installationId,
        repositories: [repo],
        permissions,
      })
    ).data;

  async function token(req: IncomingMessage) {
    const authenticated = await authenticate(req, attemptRequestSchema);
    const { identity, request, ctx, installationId, driver, subject, loaded, home } = authenticated;
    await ensureOwnRun(authenticated);
    // Record the answer first: only the writer whose write lands mints a token.
    const { attempt } = request;
    const at = now();
    const job = identity.runId;
    const fact: EngineEvent =
      "task" in subject
        ? { type: "job_started", task: subject.task, attempt, job, at }
        : { type: "resolution_started", ...subject.resolution, n: attempt, job, at };
    const started = await driver.driveOnce(request.run, [fact], loaded);
    if (!started?.changed) {
      const record = started ? recordOf(started.state, subject, attempt) : undefined;
      if (record?.job && record.job !== job) throw notOwnRun(request, record.job, job);
      const t = "task" in subject ? started?.state.tasks[subject.task] : undefined;
      const running =
        "task" in subject ? t?.attempt === attempt && t.status === "running" : record?.outcome === null;
      throw new HttpError(
        409,
        running
          ? `attempt ${attempt} of ${request.task} already has its token`
          : `attempt ${attempt} of ${request.task} is not running`,
      );
    }
    const tier = tierOfInput(loaded.engine.plan, request.task);
    const permissions = tierPermissions(tier);
    const data = await mint(installationId, ctx.repo, permissions);
    // A job in another repository than the run's reads the run there, and nothing more.
    const runToken =
      home === ctx ? null : await mint(installationId, home.repo, { contents: "read", metadata: "read" });
    return {
      token: data.token,
      ...(runToken ? { run_token: runToken.token } : {}),
      expires_at: data.expires_at,
      permissions: data.permissions ?? permissions,
      tier,
      state_version: started.version,
      report_key: reportKey(identity.repository, request, job),
    };
  }

  async function pushToken(req: IncomingMessage) {
    const authenticated = await authenticate(req, attemptRequestSchema);
    const { identity, request, ctx, installationId, driver, subject } = authenticated;
    let loaded = authenticated.loaded;
    const record = (l: Loaded) => recordOf(l.run, subject, request.attempt);
    if (record(loaded)?.job !== identity.runId && loaded.cached)
      loaded = (await driver.load(request.run, { fresh: true }))!;
    const own = record(loaded);
    if (own?.job && own.job !== identity.runId) throw notOwnRun(request, own.job, identity.runId);
    // Bound to the job that took the attempt's first token (job_started recorded its run id).
    if (!own?.startedAt || own.job !== identity.runId)
      throw new HttpError(403, `attempt ${request.attempt} of ${request.task} has not taken its first token`);
    requireReportKey(req, authenticated);
    const t = "task" in subject ? loaded.run.tasks[subject.task] : undefined;
    const running =
      "task" in subject ? t?.attempt === request.attempt && t.status === "running" : own.outcome === null;
    if (!running) throw new HttpError(409, `attempt ${request.attempt} of ${request.task} is not running`);
    if (tierOfInput(loaded.engine.plan, request.task) === "read_only")
      throw new HttpError(403, `${request.task} is a read_only task: its attempts push nothing`);
    const permissions = { contents: "write", metadata: "read" } as const;
    const data = await mint(installationId, ctx.repo, permissions);
    return { token: data.token, expires_at: data.expires_at, permissions: data.permissions ?? permissions };
  }

  async function reportResult(req: IncomingMessage) {
    const authenticated = await authenticate(req, attemptReportSchema);
    const { identity, request, driver, subject } = authenticated;
    const ownedBy = (l: Loaded) => recordOf(l.run, subject, request.attempt)?.job === identity.runId;
    let loaded = authenticated.loaded;
    if (!ownedBy(loaded) && loaded.cached) loaded = (await driver.load(request.run, { fresh: true }))!;
    if (!ownedBy(loaded))
      throw new HttpError(403, `attempt ${request.attempt} of ${request.task} belongs to another job`);
    requireReportKey(req, authenticated);
    const report = request as AttemptReport;
    // A task's runner that can hold its report does, while its PR waits for required checks running now.
    const hold = "task" in subject && req.headers[REPORT_HOLD_HEADER] === "1" ? subject.task : undefined;
    const driven = await driver.driveReport(request.run, factsOfReport(subject, report, now()), loaded, hold);
    if (driven?.held) return { ok: true, held: true, retry_after_ms: REPORT_HOLD_POLL_MS, status: "running" };
    const run = driven?.state;
    const status =
      "task" in subject
        ? run?.tasks[subject.task]?.status
        : run && recordOf(run, subject, request.attempt)?.outcome;
    return { ok: true, status: status ?? null };
  }

  return async (req: IncomingMessage, res: ServerResponse): Promise<boolean> => {
    const path = (req.url ?? "").split("?")[0];
    const routes: Record<string, (req: IncomingMessage) => Promise<object>> = {
      "/agentrelay/token": token,
      "/agentrelay/push-token": pushToken,
      "/agentrelay/report": reportResult,
    };
    const route = routes[path ?? ""] ?? null;
    if (!route) return false;
    const send = (status: number, body: object) =>
      res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
    if (req.method !== "POST") {
      send(405, { error: "POST only" });
      return true;
    }
    try {
      send(200, await route(req));
    } catch (error) {
      if (error instanceof HttpError) send(error.status, { error: error.message });
      // GitHub's write limit is spent for longer than a request waits: the runner tries again.
      else if (error instanceof WriteBudgetSpent) send(503, { error: error.message });
      // The run's state is damaged: the runner says so in one line, and nothing changed.
      else if (error instanceof RunStateDamageError)
        send(409, { error: `run ${error.damaged.run} cannot be read: ${error.message}` });
      else {
        app.log.error(error as Error);
        send(500, { error: "internal error" });
      }
    }
    return true;
  };
}
