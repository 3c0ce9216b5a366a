/**
 * What GitHub accepts, and text cut to fit it. Every text the app sends passes through
 * `withinLimits` (an Octokit request hook, see app/octokit.ts), so that no comment, PR, check run
 * or annotation is refused for its size (GitHub answers 422 and the work behind it fails); the
 * renderers also cut their own texts where a cut can say more (a table keeps its rows whole).
 */

export const LIMITS = {
  /** Issue, PR and comment bodies (characters). */
  body: 65_536,
  /** Check-run output summaries and texts (characters): one less than a comment's, as GitHub's OpenAPI says. */
  checkText: 65_535,
  /** Issue and PR titles (characters). */
  title: 256,
  /** Check-run output titles and annotation titles (characters). */
  checkTitle: 255,
  /** Annotation messages and raw details (bytes). */
  annotation: 64 * 1024,
  /** Annotations per request. */
  annotations: 50,
} as const;

const CUT = " … (cut to fit GitHub's limit)";

/** Length of `text` in the unit of a limit. */
const size = (text: string, unit: "chars" | "bytes") =>
  unit === "bytes" ? Buffer.byteLength(text, "utf8") : text.length;

/**
 * `text` at most `max` long: cut at the last line break (or else space) that keeps it within the
 * limit, never inside a word where a break is near, and saying that it was cut.
 */
export function fit(text: string, max: number, unit: "chars" | "bytes" = "chars"): string {
  if (size(text, unit) <= max) return text;
  const room = max - size(CUT, unit);
  let end = Math.min(room, text.length);
  // Bytes: start from as many characters, and shorten while still too long.
  while (end > 0 && size(text.slice(0, end), unit) > room) end = Math.floor(end * 0.9);
  const head = text.slice(0, end);
  const line = head.lastIndexOf("\n");
  const space = head.lastIndexOf(" ");
  const at = line > end * 0.8 ? line : space > end * 0.9 ? space : head.length;
  return `${head.slice(0, at)}${CUT}`;
}

interface Annotation {
  title?: string;
  message?: string;
  raw_details?: string;
}

/** A request's text parameters brought within GitHub's limits (in place). */
export function withinLimits(params: Record<string, unknown>): void {
  if (typeof params.body === "string") params.body = fit(params.body, LIMITS.body);
  if (typeof params.title === "string") params.title = fit(params.title, LIMITS.title);
  if (typeof params.commit_title === "string") params.commit_title = fit(params.commit_title, LIMITS.title);
  const output = params.output as
    { title?: string; summary?: string; text?: string; annotations?: Annotation[] } | undefined;
  if (output && typeof output === "object") {
    if (typeof output.title === "string") output.title = fit(output.title, LIMITS.checkTitle);
    if (typeof output.summary === "string") output.summary = fit(output.summary, LIMITS.checkText);
    if (typeof output.text === "string") output.text = fit(output.text, LIMITS.checkText);
    if (Array.isArray(output.annotations)) {
      output.annotations = output.annotations.slice(0, LIMITS.annotations).map((a) => ({
        ...a,
        ...(typeof a.title === "string" ? { title: fit(a.title, LIMITS.checkTitle) } : {}),
        ...(typeof a.message === "string" ? { message: fit(a.message, LIMITS.annotation, "bytes") } : {}),
        ...(typeof a.raw_details === "string"
          ? { raw_details: fit(a.raw_details, LIMITS.annotation, "bytes") }
          : {}),
      }));
    }
  }
}
