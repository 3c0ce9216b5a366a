/**
 * Workflow-only mode's report binding. A task job hands its report over as a file its workflow
 * uploads; a process the agent left behind, or one that reached the artifact service, could put
 * other bytes there. So the runner writes beside the report an HMAC of it, under a key derived from a
 * secret the task job's step and the orchestrator's both hold and the agent never sees
 * (`AGENTRELAY_REPORT_SECRET` in both workflows, which name the repository's secret of that name, else
 * its Anthropic credential: no setup step of its own), over the attempt, the workflow run and the
 * report's exact bytes. The orchestrator refuses a report whose HMAC does not match.
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import type { AttemptRequest } from "./report.ts";

/** The file beside `report.json` in the report artifact that holds its HMAC (hex). */
export const REPORT_MAC_FILE = "report.mac";

/** The environment variable of both jobs that holds the secret the key derives from. */
export const REPORT_SECRET_VARIABLE = "AGENTRELAY_REPORT_SECRET";

/** The HMAC of a report's bytes, bound to the attempt and the workflow run it is the report of. */
export function reportMac(secret: string, attempt: AttemptRequest, runId: string, bytes: string): string {
  // The secret itself (an Anthropic credential, say) is never the key: a key is derived from it.
  const key = createHmac("sha256", secret).update("agentrelay workflow-only report key").digest();
  return createHmac("sha256", key)
    .update(`${attempt.run}\n${attempt.task}\n${attempt.attempt}\n${runId}\n`)
    .update(bytes)
    .digest("hex");
}

/** Whether `mac` (as read from the artifact) is the report's HMAC. */
export function reportMacMatches(
  secret: string,
  attempt: AttemptRequest,
  runId: string,
  bytes: string,
  mac: string,
): boolean {
  const expected = Buffer.from(reportMac(secret, attempt, runId, bytes));
  const given = Buffer.from(mac.trim());
  return given.length === expected.length && timingSafeEqual(given, expected);
}
