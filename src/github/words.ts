/**
 * How the text people read on GitHub writes things, the same way in every comment, check run and PR
 * body: ids and branch names as code, counts with thousands separators and their noun in the right
 * number, durations in one form.
 */
import { count, plural } from "../engine/progress.ts";
import type { Plan } from "../plan/model.ts";

export { count, plural };

/** The longest piece of code without a break opportunity: 16 capitals are about 115 px. */
const RUN = 16;

/**
 * Code that may break: `<code>` with `<wbr>` after each `_`, `-`, `.` and `/` and every RUN
 * characters between, which break a line only where it must and copy as nothing (a command shown
 * this way copies as the exact command). GitHub keeps both elements (html-pipeline's sanitization
 * allowlist, "wbr" among its elements:
 * https://github.com/gjtorikian/html-pipeline/blob/main/lib/html_pipeline/sanitization_filter.rb;
 * hast-util-sanitize's GitHub schema, lib/schema.js). Every character but letters, digits, `.`, `/`
 * and `-` is a numeric reference, so that markdown reads none of them (`_` as emphasis, `|` as a
 * cell's end, `<` as a tag). Text of `unbroken` characters or fewer stays a code span.
 */
function breakable(text: string, unbroken: number): string {
  if (text.length <= unbroken) return `\`${text}\``;
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

/** The longest word of code a line holds unbroken: an 80-character id, about 580 px, room to spare. */
const LINE_WORD = 80;

/**
 * An id, a branch, a file or a command as code in a line: `t12`, `agentrelay/g/t12`. Code wraps
 * only at its spaces, and ids and a graph's name may be 80 characters (graph/validate.ts), so a
 * branch such as `agentrelay/<graph>/<workstream>/integration` may be 170: wider than the 806 px
 * comment (issue 44). Code with a word longer than LINE_WORD may break (breakable); the rest stays
 * a code span, which reads well as plain markdown.
 */
export const code = (text: string): string =>
  text.split(/\s/).some((word) => word.length > LINE_WORD) ? breakable(text, 0) : `\`${text}\``;

/**
 * An id or a branch as code in a table cell, where it shares the row with the other cells: code of
 * 80 characters made a row twice the comment's width (issue 44). Past 24 characters it may break.
 */
export const cellCode = (text: string): string => breakable(text, 24);

/**
 * Text from the core or an agent shown to people: its code spans (the core writes branches and files
 * as `x`) shown by `show`, which breaks long ones; and the ids the engine quotes as agentrelay does
 * ("dependency 'a' failed"), when the plan knows them, as code. One pass, so that an id inside a code
 * span stays as written; a span next to another backtick or after a backslash is left to markdown.
 */
export function quoteIds(text: string, plan?: Plan, show = code): string {
  return text.replace(
    /(?<![`\\])`([^`\n]+)`(?!`)|'([A-Za-z0-9][A-Za-z0-9_.-]*)'/g,
    (quoted, span: string | undefined, id: string | undefined) => {
      if (span !== undefined) return show(span);
      return plan && (plan.tasks.has(id!) || plan.workstreams.has(id!)) ? show(id!) : quoted;
    },
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
