/**
 * A fake GitHub for one repository, in memory: the REST and GraphQL calls the app makes, answered
 * the way GitHub answers them (422 for a ref or PR that already exists, 405 for a merge GitHub
 * refuses, STALE_DATA for a stale `expectedHeadOid`). Every request is recorded, checked against
 * GitHub's OpenAPI description (the committed subset) and may be failed on purpose (faults).
 * Mounted with nock for handler tests, or counted by the API-budget bench. What it holds is
 * fake-state.ts's; each family of routes has its own module.
 */
import { actionsRoutes, workflowRunRoutes } from "./fake-actions.ts";
import { gitRoutes } from "./fake-git-routes.ts";
import { answerGraphql } from "./fake-graphql.ts";
import { issueRoutes } from "./fake-issue-routes.ts";
import { overLimit } from "./fake-limits.ts";
import { pullRoutes } from "./fake-pull-routes.ts";
import { appRoutes, recordRoutes } from "./fake-records.ts";
import { rulesetRoutes } from "./fake-rulesets.ts";
import { runByTriggers } from "./fake-workflows.ts";
import { answerMissing, Redirect, type Reply, type Route } from "./fake-reply.ts";
import { mountWithNock } from "./fake-mount.ts";
import { FakeGitHubState, type RepositoryPlace, requesterOf } from "./fake-state.ts";
import { checkRequest } from "./openapi.ts";
import { MemoryStore, type RepoStore } from "./repo-store.ts";

export class FakeGitHub extends FakeGitHubState {
  private readonly routes: [string, RegExp, Route][] = [];

  constructor(store: RepoStore = new MemoryStore(), place: RepositoryPlace = {}) {
    super(store, place);
    const route = this.route.bind(this);
    recordRoutes(this, route);
    appRoutes(this, route);
    gitRoutes(this, route);
    workflowRunRoutes(this, route);
    pullRoutes(this, route);
    issueRoutes(this, route);
    route("POST", "\\/graphql", (_m, body) =>
      answerGraphql(this, body as { query: string; variables: Record<string, unknown> }),
    );
    actionsRoutes(this, route);
    rulesetRoutes(this, route);
    // Other workflows of the default branch run by their triggers (the stand-in runs agentrelay's).
    this.onOtherDispatch = (workflow) => runByTriggers(this, workflow, this.requester);
  }

  handle(method: string, url: string, body: unknown, accept = "", authorization = ""): Reply {
    const [path = "", search = ""] = url.split("?");
    // Whose token asks (routes answer some things only to some): handled synchronously from here.
    this.requester = requesterOf(authorization, this.settings.token);
    const call = { method, path: decodeURIComponent(path), body };
    const faulted = this.fault(call) ?? (this.limits.rate ? this.rateLimits.admit(call) : null);
    if (faulted) {
      this.calls.push({ ...call, path: url, status: faulted[0] });
      return faulted;
    }
    const [status, data, headers] = this.answer(method, url, call, search, accept);
    // GitHub tells the rate limit on every answer, whether or not a test holds the fake to it.
    return [status, data, { ...this.rateLimits.headers(), ...headers }];
  }

  private answer(
    method: string,
    url: string,
    call: { method: string; path: string; body: unknown },
    search: string,
    accept: string,
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
        route(match, (body ?? {}) as Record<string, unknown>, new URLSearchParams(search), accept),
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
  async serve(method: string, url: string, body: unknown, accept = "", authorization = ""): Promise<Reply> {
    this.rateLimits.inFlight++;
    try {
      await new Promise((resolve) => setImmediate(resolve));
      return this.handle(method, url, body, accept, authorization);
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
      new Headers(init?.headers).get("authorization") ?? "",
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
    mountWithNock(origin, this.serve.bind(this));
  }

  /** Answers `method` on `path` (REPO stands for this repository's API path) with `handler`. */
  route(method: string, path: string, handler: Route): void {
    const pattern = new RegExp(`^${path.replace("REPO", this.base.replace(/\//g, "\\/"))}$`);
    this.routes.push([method, pattern, handler]);
  }
}
