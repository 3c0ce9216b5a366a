/**
 * The attempt's report key: what makes a report (and a push-token request) the runner's, not any
 * process's in the job. Any process in the job that can run code could fetch the job's OIDC token;
 * none but the runner holds this key.
 *
 * The app hands the key out once, with the attempt's first token (/agentrelay/token answers once per
 * attempt: job_started is recorded by compare-and-swap before it answers), and the runner asks for
 * that token before any agent process exists. The runner keeps the key in memory only (never in an
 * environment, a file or a child's arguments) and signs each request body with it (HMAC-SHA256).
 *
 * The app keeps no memory between requests, so the key is derived, not stored: an HMAC, under a
 * secret only the app holds, of the attempt and of what job_started recorded (the job's run id and
 * when it took the token). Any replica derives the same key from the run state it reads; nobody
 * without the app's secret can.
 */
import { createHmac, timingSafeEqual } from "node:crypto";

/** The header that carries `sha256=<hex>`, the HMAC of the request body under the attempt's key. */
export const SIGNATURE_HEADER = "x-agentrelay-signature";

export interface KeyedAttempt {
  repository: string;
  run: string;
  task: string;
  attempt: number;
  /** The workflow run that took the attempt's first token (job_started). */
  job: string;
  /** When it took it (job_started's time, as the run state records it). */
  startedAt: number;
}

export function attemptKey(appSecret: string, a: KeyedAttempt): string {
  const what = ["agentrelay report key v1", a.repository, a.run, a.task, a.attempt, a.job, a.startedAt];
  return createHmac("sha256", appSecret).update(what.join("\n")).digest("base64url");
}

export function signBody(key: string, body: string): string {
  return `sha256=${createHmac("sha256", key).update(body).digest("hex")}`;
}

export function signatureMatches(key: string, body: string, header: string | undefined): boolean {
  if (!header) return false;
  const expected = Buffer.from(signBody(key, body));
  const given = Buffer.from(header);
  return given.length === expected.length && timingSafeEqual(given, expected);
}
