/**
 * The parts of GitHub's webhook payloads the app's handlers read, checked before any handler runs: a
 * signed payload that lacks them (JSON `null`, a `push` without `commits`) is answered 400 with the
 * field at fault, never a TypeError deep in a handler. Everything else in a payload passes as it is.
 */
import { z } from "zod";

const object = <T extends z.ZodRawShape>(shape: T) => z.looseObject(shape);
const repository = object({
  name: z.string(),
  full_name: z.string(),
  default_branch: z.string(),
  owner: object({ login: z.string() }),
});
const sender = object({ login: z.string(), type: z.string() });
const base = { installation: object({ id: z.number() }), repository, sender };

const EVENTS: Record<string, z.ZodType> = {
  push: object({
    ...base,
    ref: z.string(),
    after: z.string(),
    deleted: z.boolean(),
    commits: z.array(
      object({ added: z.array(z.string()).optional(), modified: z.array(z.string()).optional() }),
    ),
  }),
  pull_request: object({
    ...base,
    action: z.string(),
    pull_request: object({
      number: z.number(),
      html_url: z.string(),
      merged: z.boolean().nullish(),
      head: object({ ref: z.string(), sha: z.string(), repo: object({ full_name: z.string() }).nullable() }),
    }),
  }),
  workflow_run: object({
    ...base,
    action: z.string(),
    workflow_run: object({
      // Absent from older payloads (GitHub's published examples): such a run is not known to be ours
      // (github/attempt-runs.ts reads these to tell the attempt's run from any other bearing its name).
      id: z.number().optional(),
      path: z.string().optional(),
      event: z.string().optional(),
      head_branch: z.string().nullish(),
      head_repository: object({ full_name: z.string() }).nullish(),
      created_at: z.string().optional(),
      conclusion: z.string().nullable(),
      display_title: z.string().nullish(),
      html_url: z.string(),
    }),
  }),
  check_suite: object({
    ...base,
    action: z.string(),
    check_suite: object({
      head_branch: z.string().nullable(),
      conclusion: z.string().nullable(),
      pull_requests: z.array(z.unknown()),
    }),
  }),
  check_run: object({
    ...base,
    action: z.string(),
    check_run: object({ name: z.string(), external_id: z.string().nullish() }),
  }),
  issue_comment: object({
    ...base,
    action: z.string(),
    comment: object({ id: z.number(), body: z.string() }),
    issue: object({ number: z.number(), body: z.string().nullish() }),
  }),
};

/** Why a payload of `event` cannot be handled (the first field at fault), or null when it can. */
export function payloadProblem(event: string, payload: unknown): string | null {
  if (payload === null || typeof payload !== "object" || Array.isArray(payload))
    return "the payload is not a JSON object";
  const schema = EVENTS[event];
  if (!schema) return null; // not an event the app handles: ignored
  const result = schema.safeParse(payload);
  if (result.success) return null;
  const issue = result.error.issues[0]!;
  const at = issue.path
    .map((p) => (typeof p === "number" ? `[${p}]` : `.${String(p)}`))
    .join("")
    .slice(1);
  return `${event} payload: ${at || "(root)"}: ${issue.message}`;
}
