/**
 * Amounts of US dollars, wherever one enters a run: graph keys, `budget +USD` in a comment or on the
 * command line, a flag, a job's reported cost. They are counted in micro-dollars (millionths of a
 * dollar, `Micros`), as integers, so that adding and comparing them is exact: with floats, 3 - 2.7 is
 * 0.2999999999999998, and an attempt that fits a budget exactly was refused.
 *
 * Text is a plain decimal (`5`, `0.50`, `$12.25`): no sign, exponent, hexadecimal, binary or octal, no
 * thousands separator, at most six decimals; it is read digit by digit, never through a float. Every
 * amount lies within bounds, so that every sum of them stays an exact integer.
 */

/** Millionths of a US dollar: an integer. */
export type Micros = number;

export const MICROS_PER_USD = 1_000_000;

/** The most one amount may be: a budget, a raise, an attempt's cost. */
export const MAX_USD = 1_000_000;
export const MAX_MICROS: Micros = MAX_USD * MICROS_PER_USD;

/** The most a budget may reach with its raises. */
export const MAX_RAISED_USD = 1_000_000_000;
export const MAX_RAISED_MICROS: Micros = MAX_RAISED_USD * MICROS_PER_USD;

const DECIMAL = /^(\d{1,16})(?:\.(\d{1,6}))?$/;

/** What a plain decimal amount looks like, for messages. */
export const AMOUNT_FORM =
  "a plain decimal number of US dollars greater than 0 and at most 1000000, e.g. 5 or 0.50";

/** The micro-dollars a plain decimal says (`12`, `0.25`, at most six decimals), or null. */
export function microsOfDecimal(text: string): Micros | null {
  const match = DECIMAL.exec(text);
  if (!match) return null;
  const micros = Number(match[1]) * MICROS_PER_USD + Number((match[2] ?? "").padEnd(6, "0"));
  return Number.isSafeInteger(micros) ? micros : null;
}

/** The amount `text` says (a plain decimal, `$` allowed), or why it is not one. */
export function parseUsd(text: string): { micros: Micros } | { error: string } {
  const trimmed = text.trim();
  const micros = /^\$?\d{1,7}(\.\d{1,6})?$/.test(trimmed)
    ? microsOfDecimal(trimmed.replace(/^\$/, ""))
    : null;
  if (micros === null || micros <= 0 || micros > MAX_MICROS)
    return { error: `'${text}' is not ${AMOUNT_FORM}` };
  return { micros };
}

/**
 * The micro-dollars of a number a file wrote as a decimal (a YAML or JSON number), exactly, or null
 * when it is not a plain decimal of at most six decimals. A float holds 15 significant digits exactly,
 * and an amount within bounds has at most 13 (7 before the point, 6 after): the shortest text of the
 * number (`String`) is then the decimal that was written, read digit by digit.
 */
export function microsOfNumber(value: number): Micros | null {
  return Number.isFinite(value) && value >= 0 ? microsOfDecimal(String(value)) : null;
}

/**
 * The nearest micro-dollar of a float of dollars that has more digits than that: a cost as Claude
 * Code reports it (its `total_cost_usd` sums floats), or an amount a run stored before amounts were
 * counted in micro-dollars. `toFixed(6)` rounds the float itself to six decimals (ties up); null when
 * it is not a finite amount from 0 to 10^15 dollars.
 */
export function microsOfDollars(value: number): Micros | null {
  if (!Number.isFinite(value) || value < 0 || value > 1e15) return null;
  return microsOfDecimal(value.toFixed(6));
}

/** Whether `micros` is a cost a job may report: an integer from 0 to $1,000,000. */
export const isCost = (micros: number): boolean =>
  Number.isSafeInteger(micros) && micros >= 0 && micros <= MAX_MICROS;

/** The whole dollars with thousands separators: "1,234". */
const grouped = (whole: number): string => String(whole).replace(/\B(?=(\d{3})+(?!\d))/g, ",");

/** `micros` as dollars with `decimals` decimals (1 to 6), rounded half up. */
function fixed(micros: Micros, decimals: number): { whole: number; fraction: string } {
  const unit = 10 ** (6 - decimals);
  const units = Math.floor((micros + Math.floor(unit / 2)) / unit);
  const scale = 10 ** decimals;
  return {
    whole: Math.floor(units / scale),
    fraction: String(units % scale).padStart(decimals, "0"),
  };
}

/** The step `usd` shows an amount to: a cent from a dollar up, else a hundredth of a cent (micro-dollars). */
export const usdStep = (micros: Micros): Micros => (micros >= MICROS_PER_USD - 50 ? 10_000 : 100);

/**
 * Parts of `total` (they add up to it) rounded to the step `usd(total)` shows, so that the amounts
 * shown add up to the total shown: each part goes down to a step, and the steps left go to the parts
 * that lost the most (largest remainders; the earlier part first on a tie). `usd` rounds half up, and
 * so does the total here.
 */
export function roundedParts(total: Micros, parts: Micros[]): Micros[] {
  const step = usdStep(total);
  const steps = Math.floor((total + step / 2) / step);
  const down = parts.map((p) => Math.floor(p / step));
  let left = steps - down.reduce((a, b) => a + b, 0);
  const order = parts.map((p, i) => [p % step, i] as const).sort((a, b) => b[0] - a[0] || a[1] - b[1]);
  for (const [, i] of order) {
    if (left <= 0) break;
    down[i]!++;
    left--;
  }
  return down.map((n) => n * step);
}

/**
 * Dollars as people read them: cents, and tenths and hundredths of a cent below a dollar where an
 * amount has them ($0.25, $0.0025, $2,000.00).
 */
export function usd(micros: Micros): string {
  if (micros >= MICROS_PER_USD - 50) {
    const { whole, fraction } = fixed(micros, 2);
    return `$${grouped(whole)}.${fraction}`;
  }
  const { whole, fraction } = fixed(micros, 4);
  return `$${whole}.${fraction.replace(/(\d{2}\d*?)0+$/, "$1")}`;
}

/** Dollars to the micro-dollar, for amounts compared in one line ("$0.299999 left, less than $0.30"). */
export function usdExact(micros: Micros): string {
  const whole = Math.floor(micros / MICROS_PER_USD);
  const fraction = String(micros % MICROS_PER_USD)
    .padStart(6, "0")
    .replace(/(\d{2}\d*?)0+$/, "$1");
  return `$${grouped(whole)}.${fraction}`;
}

/** A plain decimal of dollars with six decimals, for programs (`--max-budget-usd 0.300000`). */
export function dollarsText(micros: Micros): string {
  const whole = Math.floor(micros / MICROS_PER_USD);
  return `${whole}.${String(micros % MICROS_PER_USD).padStart(6, "0")}`;
}
