/** The result file an attempt process leaves (attempt/run-attempt.ts), as the local runner reads it. */
import { readFileSync } from "node:fs";
import { attemptResultSchema } from "../protocol/report.ts";

/** The attempt process's result file, read with the report's schema (null when missing or malformed). */
export function readResult(file: string) {
  let json: { sessionId?: unknown };
  try {
    json = JSON.parse(readFileSync(file, "utf8")) as { sessionId?: unknown };
  } catch {
    return null;
  }
  const parsed = attemptResultSchema.safeParse(json);
  if (!parsed.success) return null;
  return { result: parsed.data, sessionId: typeof json.sessionId === "string" ? json.sessionId : null };
}
