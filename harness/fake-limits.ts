/**
 * The limits GitHub puts on what a request may carry, as the fake enforces them in every test: a
 * request past one is answered 422 as GitHub answers it, and the app's own cutting (github/limits.ts)
 * is what keeps it within them.
 * - Issue, PR and comment bodies: 65,536 characters; titles: 256
 *   (https://github.com/orgs/community/discussions/27190, and the REST API's 422 "body is too long").
 * - Check runs (https://docs.github.com/en/rest/checks/runs#create-a-check-run): an annotation's
 *   message at most 64 KB.
 * - workflow_dispatch (https://docs.github.com/en/actions/reference/workflows-and-actions/events-that-trigger-workflows#workflow_dispatch):
 *   the inputs' payload at most 65,535 characters.
 * GitHub's OpenAPI description, which the fake checks every request against (openapi.ts), states the
 * others: check-run summaries and texts at most 65,535 characters, at most 50 annotations per request,
 * at most 25 dispatch inputs.
 */
import type { Reply } from "./fake-reply.ts";

const failed = (field: string, message: string): Reply => [
  422,
  { message: "Validation Failed", errors: [{ resource: "Request", field, code: "custom", message }] },
];

const tooLong = (text: unknown, max: number) => typeof text === "string" && text.length > max;

/** The 422 GitHub answers for a request past one of these limits, or null. */
export function overLimit(method: string, path: string, body: unknown): Reply | null {
  if (method === "GET" || method === "DELETE" || !body || typeof body !== "object") return null;
  const b = body as Record<string, unknown>;
  if (/\/(issues|pulls)(\/\d+)?$|\/comments(\/\d+)?$/.test(path)) {
    if (tooLong(b.body, 65_536)) return failed("body", "body is too long (maximum is 65536 characters)");
    if (tooLong(b.title, 256)) return failed("title", "title is too long (maximum is 256 characters)");
  }
  if (/\/check-runs(\/\d+)?$/.test(path) && b.output && typeof b.output === "object") {
    const output = b.output as { annotations?: { message?: unknown }[] };
    if (
      output.annotations?.some(
        (a) => typeof a.message === "string" && Buffer.byteLength(a.message) > 64 * 1024,
      )
    )
      return failed("output.annotations.message", "an annotation's message is at most 64 KB");
  }
  if (/\/dispatches$/.test(path) && b.inputs && typeof b.inputs === "object") {
    const inputs = b.inputs as Record<string, unknown>;
    if (JSON.stringify(inputs).length > 65_535)
      return failed("inputs", "inputs are too large (maximum is 65535 characters)");
  }
  return null;
}
