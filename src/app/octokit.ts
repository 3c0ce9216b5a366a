/**
 * The app's Octokit: Probot's, with the retry and rate-limit policy of every agentrelay client
 * (github/client-policy.ts) and the app's JWT signed once and reused.
 */
import { createHash } from "node:crypto";
import { ProbotOctokit } from "probot";
import githubAppJwt from "universal-github-app-jwt";
import { gitHubLimits, MAX_RETRIES, type OctokitOptions, withRetryPolicy } from "../github/client-policy.ts";
import { writePacing } from "../github/write-pacing.ts";

export { MAX_RETRIES };

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

export function agentrelayOctokit(options: { retryBaseMs?: number } = {}): typeof ProbotOctokit {
  return ProbotOctokit.plugin(gitHubLimits, writePacing).defaults((o: OctokitOptions) =>
    withRetryPolicy({ ...o, auth: withJwtSigner(o.auth) }, options.retryBaseMs),
  ) as typeof ProbotOctokit;
}
