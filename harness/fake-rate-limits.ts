/**
 * GitHub's rate limits on one installation, as the fake enforces them in every test (a test that
 * needs them off says `gh.limits.rate = false`), on a clock tests can move (FakeClock):
 * - Secondary limits (https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api#about-secondary-rate-limits):
 *   at most 100 concurrent requests; 900 points a minute for REST (a GET 1, a write 5) and 2,000 for
 *   GraphQL (a query 1, a mutation 5); at most 80 content-generating requests a minute and 500 an
 *   hour. Past one, GitHub answers 403 or 429 with `retry-after` (seconds) and "You have exceeded a
 *   secondary rate limit". Which requests generate content GitHub leaves open; the fake counts every
 *   write (a REST POST, PATCH, PUT or DELETE, a GraphQL mutation), as the issue that asked for it did.
 * - The primary limit (https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api#primary-rate-limit-for-github-app-installations):
 *   5,000 requests an hour for an installation, told in `x-ratelimit-*` headers on every answer;
 *   past it, 403 with `x-ratelimit-remaining: 0` and the reset time. A workflow's GITHUB_TOKEN has
 *   1,000 an hour per repository (https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api#primary-rate-limit-for-github_token-in-github-actions):
 *   the limit is read from the token the fake's repository settings say (fake-repo-settings.ts).
 * Calls the app makes as itself (`/app/…`, signed with its JWT) are not the installation's.
 */
import type { Reply } from "./fake-reply.ts";

export const LIMITS = {
  concurrent: 100,
  restPointsPerMinute: 900,
  graphqlPointsPerMinute: 2_000,
  writesPerMinute: 80,
  writesPerHour: 500,
  requestsPerHour: 5_000,
} as const;

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

/** Real time plus what `sleep` skipped: waits cost no wall time, and time still passes. */
export class FakeClock {
  /** What `sleep` skipped so far; one for clocks that follow another. */
  private moved = { skew: 0 };
  now = (): number => Date.now() + this.moved.skew;
  /** Moves the clock on by `ms` at once. */
  advance(ms: number): void {
    this.moved.skew += Math.max(0, ms);
  }
  /** From now on, reads and moves as `leader` does: several repositories of one GitHub, one time. */
  follow(leader: FakeClock): void {
    this.moved = leader.moved;
  }
  /** Moves the clock to `at` if it is later. */
  advanceTo(at: number): void {
    this.advance(at - this.now());
  }
  sleep = async (ms: number): Promise<void> => {
    const until = this.now() + ms;
    await Promise.resolve();
    this.advanceTo(until); // two sleepers waiting for the same moment move the clock once
  };
}

/** A request as the limits see it. */
export interface Metered {
  method: string;
  path: string;
  body: unknown;
}

export const isWrite = ({ method, path, body }: Metered): boolean =>
  path === "/graphql"
    ? /^\s*mutation\b/.test(String((body as { query?: unknown } | undefined)?.query ?? ""))
    : method !== "GET" && method !== "HEAD";

const secondary = (seconds: number): Reply => [
  403,
  {
    message: "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.",
    documentation_url:
      "https://docs.github.com/rest/using-the-rest-api/rate-limits-for-the-rest-api#about-secondary-rate-limits",
  },
  { "retry-after": String(Math.max(1, Math.ceil(seconds))) },
];

export class RateLimits {
  /** Times of the writes, REST points and GraphQL points spent (one entry per point group). */
  private readonly writes: number[] = [];
  private readonly points: { at: number; rest: number; graphql: number }[] = [];
  private hour = { start: 0, used: 0 };
  inFlight = 0;
  /** What was answered 403 or 429, by limit. */
  readonly refused = { secondary: 0, primary: 0, concurrent: 0 };

  constructor(
    private readonly clock: () => number,
    /** The primary limit of the token the requests come with (an app's 5,000; GITHUB_TOKEN's 1,000). */
    private readonly requestsPerHour: () => number = () => LIMITS.requestsPerHour,
  ) {}

  /** The answer GitHub gives a request past a limit, or null (the request is counted). */
  admit(request: Metered): Reply | null {
    if (request.path.startsWith("/app/") || request.path === "/app") return null;
    const now = this.clock();
    if (now - this.hour.start >= HOUR) this.hour = { start: now, used: 0 };
    if (this.hour.used >= this.requestsPerHour()) {
      this.refused.primary++;
      return [
        403,
        { message: `API rate limit exceeded for installation ID 42.` },
        { ...this.headers(), "x-ratelimit-remaining": "0" },
      ];
    }
    if (this.inFlight > LIMITS.concurrent) {
      this.refused.concurrent++;
      return secondary(60);
    }
    const write = isWrite(request);
    const graphql = request.path === "/graphql";
    const cost = write ? 5 : 1;
    const recent = this.points.filter((p) => p.at > now - MINUTE);
    const spent = recent.reduce((n, p) => n + (graphql ? p.graphql : p.rest), 0);
    const waitFor = (times: number[], window: number, max: number): number | null => {
      const inWindow = times.filter((t) => t > now - window);
      return inWindow.length < max ? null : inWindow[inWindow.length - max]! + window - now;
    };
    const pointsWait =
      spent + cost > (graphql ? LIMITS.graphqlPointsPerMinute : LIMITS.restPointsPerMinute)
        ? recent[0]!.at + MINUTE - now
        : null;
    const wait =
      pointsWait ??
      (write
        ? (waitFor(this.writes, MINUTE, LIMITS.writesPerMinute) ??
          waitFor(this.writes, HOUR, LIMITS.writesPerHour))
        : null);
    if (wait !== null) {
      this.refused.secondary++;
      return secondary(wait / 1000);
    }
    this.hour.used++;
    if (write) {
      this.writes.push(now);
      while (this.writes[0]! <= now - HOUR) this.writes.shift();
    }
    this.points.push({ at: now, rest: graphql ? 0 : cost, graphql: graphql ? cost : 0 });
    while (this.points.length > 0 && this.points[0]!.at <= now - MINUTE) this.points.shift();
    return null;
  }

  /** The primary limit's headers, as GitHub sends them on every answer. */
  headers(): Record<string, string> {
    return {
      "x-ratelimit-limit": String(this.requestsPerHour()),
      "x-ratelimit-remaining": String(Math.max(0, this.requestsPerHour() - this.hour.used)),
      "x-ratelimit-used": String(this.hour.used),
      "x-ratelimit-reset": String(Math.ceil((this.hour.start + HOUR) / 1000)),
      "x-ratelimit-resource": "core",
    };
  }
}
