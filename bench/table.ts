import { usd } from "../src/engine/budget.ts";
import { unitCost } from "../src/engine/spend.ts";
import type { RunState } from "../src/engine/types.ts";

/** Prints rows as a Markdown table, the format every bench script reports in. */
export function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(" | ")} |`;
  return [line(header), line(widths.map((w) => "-".repeat(w))), ...rows.map(line)].join("\n");
}

/** What each merged task of a finished run cost (its spend over the tasks that merged), as a cell. */
export function perMergedTask(state: object): string {
  const unit = unitCost(state as RunState);
  return unit.perMergedTaskMicros === null ? "none merged" : usd(unit.perMergedTaskMicros);
}
