/**
 * The token the runner pushes with. The attempt's first token (from /agentrelay/token) lives an hour
 * at most, and an attempt may run longer (the default limit is 100 minutes): when the first token has
 * less than PUSH_MARGIN_MS left, the runner exchanges the job's OIDC token again for a push-only token
 * (/agentrelay/push-token). The app answers only the job that took the attempt's first token, and only
 * while the attempt runs; the agent never holds the job's OIDC credentials, and the runner asks after
 * every agent process has ended.
 */
import * as core from "@actions/core";
import type { AttemptRequest } from "../protocol/report.ts";
import { postJson, reportKeyHeader } from "./job-io.ts";

export interface Grant {
  token: string;
  /** When GitHub lets the token lapse (ISO 8601, as GitHub writes it). */
  expiresAt: string;
}

/** What a push needs left on a token: the push itself, retries, and clocks that disagree. */
export const PUSH_MARGIN_MS = 10 * 60_000;

/** The attempt's first token while it has the margin left, else a push-only one asked for now. */
export async function tokenForPush(
  first: Grant,
  ask: () => Promise<Grant>,
  now: () => number = Date.now,
): Promise<Grant> {
  const left = Date.parse(first.expiresAt) - now();
  if (Number.isFinite(left) && left > PUSH_MARGIN_MS) return first;
  const grant = await ask();
  core.setSecret(grant.token);
  core.info(
    `the attempt's first token lapses at ${first.expiresAt}: pushing with a new one (until ${grant.expiresAt})`,
  );
  return grant;
}

/** The OIDC exchange again, for a push-only token of the same attempt. */
export async function askPushToken(
  appUrl: string,
  attempt: AttemptRequest,
  audience: string,
  reportKey: string | null,
): Promise<Grant> {
  const answer = await postJson(
    `${appUrl}/agentrelay/push-token`,
    attempt,
    await core.getIDToken(audience),
    reportKeyHeader(reportKey),
  );
  return { token: String(answer.token), expiresAt: String(answer.expires_at) };
}
