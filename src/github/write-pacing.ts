/**
 * Writes paced under one budget per installation, with priorities. GitHub allows an installation at
 * most 80 content-generating requests a minute and 500 an hour, across REST and GraphQL
 * (https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api#about-secondary-rate-limits),
 * and answers past them 403 or 429 with `retry-after`. A run's progress (dispatches, merges, state)
 * waits for its turn; what people watch (status comment edits, check runs of attempts that
 * succeeded) yields while the budget is tight, and the status comment's interval grows as the budget
 * fills. An answer that says a limit was hit waits as it says and is tried again (up to 3 times), so no
 * effect is dropped; one that would wait too long fails the handler in one line, and the reconciler
 * carries the work out later.
 *
 * The budget counts this process's writes: replicas each keep their own, and GitHub's answers keep
 * them honest (a refused write waits as told). It is a cache of GitHub's limits, not run state.
 */
import type { Octokit } from "@octokit/rest";
import { MAX_RETRIES } from "./client-policy.ts";

export interface Clock {
  now(): number;
  sleep(ms: number): Promise<void>;
}

export const REAL_CLOCK: Clock = {
  now: Date.now,
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
};

/**
 * `progress` moves a run; `status` is the status comment (its interval adapts); `view` is what only
 * informs (a check run of an attempt that succeeded), and is skipped first.
 */
export type Priority = "progress" | "status" | "view";

/** Octokit request options that mark a call's priority (`progress` is the default). */
export const priority = (p: Priority) => ({ request: { priority: p } });

/**
 * Octokit request options of a write GitHub may not count as content (enabling a workflow): sent once
 * even while this process knows the budget spent, and never waited for; GitHub's refusal is final.
 */
export const unpaced = { request: { unpaced: true } } as const;

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
export const WRITES_PER_MINUTE = 80;
export const WRITES_PER_HOUR = 500;
/** Writes a priority may use of each window: progress all of it, the others leave room for progress. */
const SHARE: Record<Priority, { minute: number; hour: number }> = {
  progress: { minute: WRITES_PER_MINUTE, hour: WRITES_PER_HOUR },
  status: { minute: WRITES_PER_MINUTE - 10, hour: WRITES_PER_HOUR - 10 },
  view: { minute: WRITES_PER_MINUTE - 10, hour: WRITES_PER_HOUR * 0.7 },
};
/** A write that would wait longer than this fails its handler instead: the reconciler does it later. */
export const MAX_WAIT_MS = 15 * MINUTE;
const CLOCK_MARGIN_MS = 1_000;
/** The longest the status comment's interval grows to, when the hour's budget is all but spent. */
const STATUS_INTERVAL_MAX_MS = 5 * MINUTE;

/** A write that yielded to progress (status, view): the caller skips it; a later event does it. */
export class WriteDeferred extends Error {
  override name = "WriteDeferred";
}

/** A write of lower priority, or null when it yielded (a later event makes it). */
export async function unlessDeferred<T>(write: () => Promise<T>): Promise<T | null> {
  try {
    return await write();
  } catch (error) {
    if (error instanceof WriteDeferred) return null;
    throw error;
  }
}

/** GitHub's write limit is spent for longer than a handler waits. */
export class WriteBudgetSpent extends Error {
  override name = "WriteBudgetSpent";
}

export class WriteBudget {
  /** Times of this installation's writes in the last hour. */
  private readonly writes: number[] = [];
  /** GitHub said to wait until then. */
  private blockedUntil = 0;

  constructor(readonly clock: Clock) {}

  private count(window: number, now: number): number {
    while (this.writes.length > 0 && this.writes[0]! <= now - HOUR) this.writes.shift();
    let n = 0;
    for (let i = this.writes.length - 1; i >= 0 && this.writes[i]! > now - window; i--) n++;
    return n;
  }

  /** How long a write of this priority waits before it may go; null when it yields instead. */
  waitFor(p: Priority, now = this.clock.now()): number | null {
    const share = SHARE[p];
    const blocked = Math.max(0, this.blockedUntil - now);
    if (p !== "progress")
      return blocked === 0 && this.count(MINUTE, now) < share.minute && this.count(HOUR, now) < share.hour
        ? 0
        : null;
    // The oldest write that must leave a window before this one fits in it.
    const free = (window: number, max: number) => {
      const n = this.count(window, now);
      return n < max ? 0 : this.writes[this.writes.length - max]! + window - now;
    };
    const wait = Math.max(blocked, free(MINUTE, share.minute), free(HOUR, share.hour));
    // GitHub's clock and ours differ by a little: a write that waits goes a moment after its turn.
    return wait > 0 ? wait + CLOCK_MARGIN_MS : 0;
  }

  record(now = this.clock.now()): void {
    this.writes.push(now);
  }

  block(until: number): void {
    this.blockedUntil = Math.max(this.blockedUntil, until);
  }

  /** Writes made in the last hour. */
  used(now = this.clock.now()): number {
    return this.count(HOUR, now);
  }

  /**
   * The status comment's interval: the configured one while at most half the hour's budget is used,
   * growing to 5 minutes as it fills, so that its edits never take what progress needs.
   */
  statusInterval(configured: number, now = this.clock.now()): number {
    const fill = this.used(now) / WRITES_PER_HOUR;
    if (fill <= 0.5) return configured;
    return Math.max(configured, Math.round(STATUS_INTERVAL_MAX_MS * Math.min(1, (fill - 0.5) / 0.4)));
  }
}

const budgets = new WeakMap<Clock, Map<string, WriteBudget>>();

/** The budget of an installation (one per process and clock). */
export function writeBudget(installation: string, clock: Clock = REAL_CLOCK): WriteBudget {
  let byInstallation = budgets.get(clock);
  if (!byInstallation) budgets.set(clock, (byInstallation = new Map()));
  let budget = byInstallation.get(installation);
  if (!budget) byInstallation.set(installation, (budget = new WriteBudget(clock)));
  return budget;
}

interface RequestOptions {
  method?: string;
  url?: string;
  query?: string;
  /** A request body sent as it is (the state store sends its GraphQL documents so). */
  data?: unknown;
  request?: { priority?: Priority; unpaced?: boolean };
}

/** A REST write or a GraphQL mutation; the app's own calls as itself (`/app/…`) are not the installation's. */
export function isInstallationWrite(o: RequestOptions): boolean {
  const url = o.url ?? "";
  if (url.startsWith("/app/") || url === "/app") return false;
  if (url === "/graphql")
    return typeof o.data === "string"
      ? /^\{"query":"\s*mutation\b/.test(o.data)
      : /^\s*mutation\b/.test(o.query ?? "");
  return (o.method ?? "GET") !== "GET" && o.method !== "HEAD";
}

/** How long GitHub says to wait, when an error is a rate limit's answer; null otherwise. */
export function rateLimitWait(error: unknown, now: number): number | null {
  const e = error as {
    status?: number;
    message?: string;
    response?: { headers?: Record<string, string | undefined> };
  };
  if (e.status !== 403 && e.status !== 429) return null;
  const headers = e.response?.headers ?? {};
  if (headers["retry-after"]) return Number(headers["retry-after"]) * 1000;
  if (headers["x-ratelimit-remaining"] === "0" && headers["x-ratelimit-reset"])
    return Math.max(0, Number(headers["x-ratelimit-reset"]) * 1000 - now);
  if (/secondary rate limit/i.test(e.message ?? "")) return MINUTE; // GitHub: wait at least a minute
  return null;
}

/**
 * An Octokit plugin: every request of the installation goes through its write budget. Options:
 * `pacing.clock` (tests and benches run on a simulated one), `pacing.maxWaitMs` (how long a write may
 * wait for its turn), `pacing.installation` (defaults to the installation id of the auth options).
 */
export function writePacing(
  octokit: Pick<Octokit, "hook">,
  options: { pacing?: { clock?: Clock; maxWaitMs?: number; installation?: string }; auth?: unknown },
): { writeBudget: WriteBudget } {
  const clock = options.pacing?.clock ?? REAL_CLOCK;
  const maxWait = options.pacing?.maxWaitMs ?? MAX_WAIT_MS;
  const auth = options.auth as { installationId?: number | string } | undefined;
  const installation = options.pacing?.installation ?? String(auth?.installationId ?? "default");
  const budget = writeBudget(installation, clock);
  octokit.hook.wrap("request", async (request, endpoint) => {
    const o = endpoint as RequestOptions;
    const write = isInstallationWrite(o);
    const p = o.request?.priority ?? "progress";
    const once = write && o.request?.unpaced === true;
    for (let tries = 0; ; tries++) {
      if (once) budget.record();
      else if (write) {
        const wait = budget.waitFor(p);
        if (wait === null) throw new WriteDeferred(`${o.method} ${o.url} yielded to the run's progress`);
        if (wait > maxWait)
          throw new WriteBudgetSpent(
            `GitHub's write limit for this installation is spent for ${Math.ceil(wait / MINUTE)} minutes: the run goes on when it frees up`,
          );
        if (wait > 0) await clock.sleep(wait);
        budget.record();
      }
      try {
        return await request(endpoint);
      } catch (error) {
        const wait = rateLimitWait(error, clock.now());
        if (wait === null) throw error;
        budget.block(clock.now() + wait);
        if (p !== "progress") throw new WriteDeferred(`${o.method} ${o.url} yielded to a rate limit`);
        // GitHub says the limit is spent for longer than a handler waits (another replica spent it):
        // the same one line as when this process knows it, and the reconciler does the work later.
        if (wait > maxWait || once)
          throw new WriteBudgetSpent(
            `GitHub's rate limit for this installation is spent for ${Math.ceil(wait / MINUTE)} minutes: the run goes on when it frees up`,
          );
        if (tries >= MAX_RETRIES) throw error;
        if (!write) await clock.sleep(wait); // a write waits at the top, with the budget
      }
    }
  });
  return { writeBudget: budget };
}

/** The write budget an Octokit carries (none for clients built without the plugin). */
export const writeBudgetOf = (octokit: unknown): WriteBudget | undefined =>
  (octokit as { writeBudget?: WriteBudget }).writeBudget;
