/**
 * How every agentrelay client treats GitHub (the app's Probot Octokit and the orchestrator workflow's
 * Octokit alike): 5xx answers are retried (plugin-retry, up to 3 times with growing delays), never an
 * answer that says no (405: a PR GitHub will not merge now, 409: a conflict), which callers read as
 * a fact. Rate limits are write-pacing.ts's: writes go under one budget per installation, and an
 * answer that says a limit was hit waits as GitHub says (`retry-after`, or the reset time) and is
 * tried again up to 3 times, then the handler fails and the reconciler picks the work up later: never
 * a tight loop, never dropped. Texts are brought within GitHub's limits before they are sent.
 */
import { withinLimits } from "./limits.ts";

export const MAX_RETRIES = 3;

export type OctokitOptions = Record<string, unknown> & {
  throttle?: Record<string, unknown>;
  retry?: Record<string, unknown>;
  auth?: unknown;
};

/** Answers that are facts, not failures: plugin-retry's list, with 405 and 409; 429 is the pacing's. */
const DO_NOT_RETRY = [400, 401, 403, 404, 405, 409, 410, 422, 429, 451];

/** Octokit options with the retry and rate-limit policy in place (throttling left off where it is off). */
export function withRetryPolicy(o: OctokitOptions, retryBaseMs = 1000): OctokitOptions {
  // plugin-throttling spaces writes; waiting out a limit's answer is the pacing's (one budget, one clock).
  const handOver = () => false;
  return {
    ...o,
    retry: { ...o.retry, retries: MAX_RETRIES, retryAfterBaseValue: retryBaseMs, doNotRetry: DO_NOT_RETRY },
    throttle:
      o.throttle?.enabled === false
        ? o.throttle
        : { ...o.throttle, onRateLimit: handOver, onSecondaryRateLimit: handOver },
  };
}

/** An Octokit plugin: every text a request sends is brought within GitHub's limits first. */
export function gitHubLimits(octokit: {
  hook: { before: (name: "request", hook: (o: Record<string, unknown>) => void) => void };
}) {
  octokit.hook.before("request", withinLimits);
}
