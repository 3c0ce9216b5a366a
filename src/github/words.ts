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

/** A duration as hours, minutes and seconds, one form at every length: "0:00:42", "116:11:00". */
export function duration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  const pad = (n: number) => String(n).padStart(2, "0");
  return `${count(Math.floor(s / 3600))}:${pad(Math.floor((s % 3600) / 60))}:${pad(s % 60)}`;
}
