/**
 * The app's Octokit: Probot's, with bounded retries everywhere. 5xx and 429 answers are retried
 * (plugin-retry, up to 3 times with growing delays); primary and secondary rate limits wait as
 * GitHub says (`retry-after`, or the reset time) and are retried up to 3 times, then the handler
 * fails and the reconciler picks the work up later: never a tight loop, never dropped. Texts are
 * brought within GitHub's limits before they are sent (github/limits.ts).
 */
import { createHash } from "node:crypto";
import { ProbotOctokit } from "probot";
import { withinLimits } from "../github/limits.ts";
import githubAppJwt from "universal-github-app-jwt";

export const MAX_RETRIES = 3;

interface Limited {
  method: string;
  url: string;
}

type OctokitOptions = Record<string, unknown> & {
  throttle?: Record<string, unknown>;
  retry?: Record<string, unknown>;
  auth?: unknown;
};

type CreateJwt = (
  appId: number | string,
  timeDifference?: number,
) => Promise<{ jwt: string; expiresAt: string }>;

/** Renew the app's JWT this long before it expires, so that no call carries one about to lapse. */
const JWT_RENEWAL_MS = 60_000;
const jwtSigners = new Map<string, CreateJwt>();

/**
 * The app's JWT, signed once and reused until a minute before it expires (GitHub accepts it for 10
 * minutes). Octokit's app auth signs a new one for every app-level call, an RSA signature of ~2 ms;
 * each job's token request makes such a call. One signer per private key: Probot creates a new
 * Octokit per handler, and they all share it.
 */
export function appJwtSigner(privateKey: string): CreateJwt {
  const key = createHash("sha256").update(privateKey).digest("hex");
  let signer = jwtSigners.get(key);
  if (!signer) {
    let cached: {
      appId: number | string;
      skew: number;
      renewAt: number;
      jwt: string;
      expiresAt: string;
    } | null = null;
    signer = async (appId, timeDifference = 0) => {
      const now = Date.now();
      if (cached && cached.appId === appId && cached.skew === timeDifference && now < cached.renewAt)
        return cached;
      const signed = await githubAppJwt({
        id: appId,
        privateKey,
        now: Math.floor(now / 1000) + timeDifference,
      });
      const expiresAt = new Date(signed.expiration * 1000);
      cached = {
        appId,
        skew: timeDifference,
        // `expiration` is on GitHub's clock; renew by ours.
        renewAt: expiresAt.getTime() - timeDifference * 1000 - JWT_RENEWAL_MS,
        jwt: signed.token,
        expiresAt: expiresAt.toISOString(),
      };
      return cached;
    };
    jwtSigners.set(key, signer);
  }
  return signer;
}

/** App credentials (Probot passes `{ appId, privateKey, ... }`) with the shared signer in place of the key. */
function withJwtSigner(auth: unknown): unknown {
  if (!auth || typeof auth !== "object" || !("privateKey" in auth)) return auth;
  const { privateKey, ...rest } = auth;
  return { ...rest, createJwt: appJwtSigner(String(privateKey)) };
}

/** An Octokit plugin: every text a request sends is brought within GitHub's limits first. */
function gitHubLimits(octokit: {
  hook: { before: (name: "request", hook: (o: Record<string, unknown>) => void) => void };
}) {
  octokit.hook.before("request", withinLimits);
}

export function agentrelayOctokit(options: { retryBaseMs?: number } = {}): typeof ProbotOctokit {
  return ProbotOctokit.plugin(gitHubLimits).defaults((o: OctokitOptions) => ({
    ...o,
    auth: withJwtSigner(o.auth),
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
