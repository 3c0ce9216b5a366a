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

/**
 * The engine's reasons name tasks and workstreams as agentrelay does, in single quotes ("dependency
 * 'a' failed"); shown to people, a known id is code like every other id.
 */
export function quoteIds(text: string, plan: Plan): string {
  return text.replace(/'([A-Za-z0-9][A-Za-z0-9_.-]*)'/g, (quoted, id: string) =>
    plan.tasks.has(id) || plan.workstreams.has(id) ? code(id) : quoted,
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
