/**
 * Amounts of US dollars, wherever one enters a run: graph keys, `budget +USD` in a comment or on the
 * command line, a flag, a job's reported cost. Text is a plain decimal (`5`, `0.50`, `$12.25`): no
 * sign, exponent, hexadecimal, binary or octal, no thousands separator; every amount lies within
 * bounds, so that no sum of them is ever infinite (JSON would store it as null).
 */

/** The most one amount may be: a budget, a raise, an attempt's cost. */
export const MAX_USD = 1_000_000;

/** The most a budget may reach with its raises. */
export const MAX_RAISED_USD = 1_000_000_000;

const DECIMAL = /^\$?(\d{1,7})(\.\d{1,6})?$/;

/** What a plain decimal amount looks like, for messages. */
export const AMOUNT_FORM =
  "a plain decimal number of US dollars greater than 0 and at most 1000000, e.g. 5 or 0.50";

/** The amount `text` says (a plain decimal), or why it is not one. */
export function parseUsd(text: string): { usd: number } | { error: string } {
  const match = DECIMAL.exec(text.trim());
  const usd = match ? Number(`${match[1]}${match[2] ?? ""}`) : Number.NaN;
  if (!(usd > 0) || usd > MAX_USD) return { error: `'${text}' is not ${AMOUNT_FORM}` };
  return { usd };
}

/** Whether `usd` is a cost a job may report: finite, 0 or more, within bounds. */
export const isCost = (usd: number): boolean => Number.isFinite(usd) && usd >= 0 && usd <= MAX_USD;
