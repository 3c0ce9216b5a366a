/**
 * The conformance suite's client: the product's (the orchestrator workflow's Octokit: retries,
 * plugin-throttling's spacing, the write pacing under GitHub's secondary limits) pointed at any API
 * base URL, without the product's cutting of texts to GitHub's limits, since the limit cases send texts
 * past them on purpose. Silent: nothing it logs could carry a token, and the table says what happened.
 */
import { retry } from "@octokit/plugin-retry";
import { throttling } from "@octokit/plugin-throttling";
import { Octokit } from "@octokit/rest";
import type { GitHubClient } from "../client.ts";
import { type OctokitOptions, withRetryPolicy } from "../client-policy.ts";
import { type Clock, writePacing } from "../write-pacing.ts";

const PacedOctokit = Octokit.plugin(retry, throttling, writePacing).defaults((o: OctokitOptions) =>
  withRetryPolicy(o),
);
/** For a server with no rate limits (a GitHub Enterprise Server that turned them off, the stand-in). */
const UnpacedOctokit = Octokit.plugin(retry).defaults((o: OctokitOptions) =>
  withRetryPolicy({ ...o, throttle: { enabled: false } }),
);

const quiet = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };

export function conformanceClient(
  token: string,
  baseUrl: string,
  options: {
    /** Whose writes these are: each token has its own budget under GitHub's limits. */
    budget: string;
    /** The clock the pacing waits on (tests run on the fake's). */
    clock?: Clock;
    /** A fetch (tests answer in process); the global one otherwise. */
    fetch?: typeof globalThis.fetch;
    /** plugin-throttling's second between writes, which GitHub asks for; off in process (the fake's clock paces). */
    throttle?: boolean;
    /** Paced under GitHub's limits (the default); off for a server with none (AGENTRELAY_GITHUB_PACING=off). */
    paced?: boolean;
  },
): GitHubClient {
  const common = { auth: token, baseUrl, log: quiet, request: { fetch: options.fetch ?? globalThis.fetch } };
  if (options.paced === false) return new UnpacedOctokit(common as never) as unknown as GitHubClient;
  return new PacedOctokit({
    ...common,
    pacing: { installation: options.budget, ...(options.clock ? { clock: options.clock } : {}) },
    ...(options.throttle === false ? { throttle: { enabled: false } } : {}),
  } as never) as unknown as GitHubClient;
}
