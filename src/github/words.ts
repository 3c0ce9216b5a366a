/**
 * How the text people read on GitHub writes things, the same way in every comment, check run and PR
 * body: ids and branch names as code, counts with thousands separators and their noun in the right
 * number, durations in one form.
 */
import { count, plural } from "../engine/progress.ts";
import type { Plan } from "../plan/model.ts";

export { count, plural };

/** An id, a branch or a file as code: `t12`, `agentrelay/g/t12`. */
export const code = (text: string): string => `\`${text}\``;

/** Code this long or shorter stays a code span in a table; longer, it may break (cellCode). */
const UNBROKEN = 24;
/** The longest piece of code without a break opportunity: 16 capitals are about 115 px. */
const RUN = 16;

/**
 * An id or a branch as code in a table cell, where it must not widen the table past the comment:
 * code does not wrap, and an id may be 80 characters (graph/validate.ts), so a row of them was twice
 * the 806 px comment (issue 44). A long one is written as HTML, `<code>` with `<wbr>` after each
 * `_`, `-`, `.` and `/` and every RUN characters between, which break a line only where it must
 * and copy as nothing. GitHub keeps both elements (html-pipeline's sanitization allowlist, "wbr"
 * among its elements: https://github.com/gjtorikian/html-pipeline/blob/main/lib/html_pipeline/sanitization_filter.rb;
 * hast-util-sanitize's GitHub schema, lib/schema.js). Every character but letters, digits, `.`, `/`
 * and `-` is a numeric reference, so that markdown reads none of them (`_` as emphasis, `|` as a
 * cell's end, `<` as a tag).
 */
export function cellCode(text: string): string {
  if (text.length <= UNBROKEN) return code(text);
  let html = "";
  let run = 0;
  const chars = [...text];
  for (const [i, ch] of chars.entries()) {
    const separator = /[_./-]/.test(ch);
    if (!separator && run === RUN) {
      html += "<wbr>";
      run = 0;
    }
    html += /[A-Za-z0-9./-]/.test(ch) ? ch : `&#${ch.codePointAt(0)};`;
    run = separator ? 0 : run + 1;
    if (separator && i < chars.length - 1) html += "<wbr>";
  }
  return `<code>${html}</code>`;
}

/**
 * The engine's reasons name tasks and workstreams as agentrelay does, in single quotes ("dependency
 * 'a' failed"); shown to people, a known id is code like every other id.
 */
export function quoteIds(text: string, plan: Plan, show = code): string {
  return text.replace(/'([A-Za-z0-9][A-Za-z0-9_.-]*)'/g, (quoted, id: string) =>
    plan.tasks.has(id) || plan.workstreams.has(id) ? show(id) : quoted,
  );
}

/** "is", "are": the verb of a count. */
export const verb = (n: number, one: string, many: string): string => (n === 1 ? one : many);

/**
 * A duration in words, its two largest units, one form at every length: "42 s", "40 min", "3 min 5 s",
 * "4 h 11 min", "5 days 20 h", "1,234 days" (never "141:37:00", which reads as a time of day).
 */
export function duration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  const [days, hours, minutes, seconds] = [
    Math.floor(s / 86_400),
    Math.floor((s % 86_400) / 3600),
    Math.floor((s % 3600) / 60),
    s % 60,
  ];
  const parts: [number, string][] = [
    [days, days === 1 ? "day" : "days"],
    [hours, "h"],
    [minutes, "min"],
    [seconds, "s"],
  ];
  const first = parts.findIndex(([n]) => n > 0);
  if (first === -1) return "0 s";
  return parts
    .slice(first, first + 2)
    .filter(([n]) => n > 0)
    .map(([n, unit]) => `${count(n)} ${unit}`)
    .join(" ");
}
