/**
 * The app's Octokit: Probot's, with bounded retries everywhere. 5xx and 429 answers are retried
 * (plugin-retry, up to 3 times with growing delays); primary and secondary rate limits wait as
 * GitHub says (`retry-after`, or the reset time) and are retried up to 3 times, then the handler
 * fails and the reconciler picks the work up later: never a tight loop, never dropped.
 */
import { ProbotOctokit } from "probot";

export const MAX_RETRIES = 3;

interface Limited {
  method: string;
  url: string;
}

type OctokitOptions = Record<string, unknown> & {
  throttle?: Record<string, unknown>;
  retry?: Record<string, unknown>;
};

export function agentrelayOctokit(options: { retryBaseMs?: number } = {}): typeof ProbotOctokit {
  return ProbotOctokit.defaults((o: OctokitOptions) => ({
    ...o,
    retry: { ...o.retry, retries: MAX_RETRIES, retryAfterBaseValue: options.retryBaseMs ?? 1000 },
    throttle:
      o.throttle?.enabled === false
        ? o.throttle
        : {
            ...o.throttle,
            onRateLimit: (_after: number, _request: Limited, _octokit: unknown, retryCount: number) =>
              retryCount < MAX_RETRIES,
            onSecondaryRateLimit: (
              _after: number,
              _request: Limited,
              _octokit: unknown,
              retryCount: number,
            ) => retryCount < MAX_RETRIES,
          },
  })) as typeof ProbotOctokit;
}
