/** Amounts of US dollars, as every path that takes one reads them (graph/amount.ts). */
import { describe, expect, it } from "vitest";
import {
  dollarsText,
  isCost,
  MAX_MICROS,
  microsOfDollars,
  microsOfNumber,
  parseUsd,
  usd,
  usdExact,
} from "../../src/graph/amount.ts";

describe("an amount of US dollars", () => {
  it.each([
    ["5", 5_000_000],
    ["0.50", 500_000],
    ["$12.25", 12_250_000],
    ["1000000", 1_000_000_000_000],
    ["0.000001", 1],
    ["0.7", 700_000],
    ["2.7", 2_700_000],
  ])("reads the plain decimal %s as %d micro-dollars, digit by digit", (text, micros) => {
    expect(parseUsd(text)).toEqual({ micros });
  });

  it.each([
    "0x10",
    "0b11",
    "0o7",
    "1e3",
    "1e303",
    `1${"0".repeat(303)}`,
    "Infinity",
    "NaN",
    "-5",
    "+5",
    "0",
    "0.00",
    "",
    "1,000",
    "5.",
    ".5",
    "1000000.01",
    "0.0000001",
    " 5 5",
  ])("refuses %j with the form it accepts", (text) => {
    const read = parseUsd(text);
    expect(read).toEqual({
      error: `'${text}' is not a plain decimal number of US dollars greater than 0 and at most 1000000, e.g. 5 or 0.50`,
    });
  });

  it("counts in whole micro-dollars, so that what floats get wrong adds up", () => {
    // 3 - 2.7 is 0.2999999999999998 in floats: less than a floor of 0.3.
    expect(3 - 2.7 < 0.3).toBe(true);
    const [three, spent, floor] = ["3", "2.7", "0.3"].map((t) => (parseUsd(t) as { micros: number }).micros);
    expect(three! - spent!).toBe(floor);
    // A file's decimals, read through their shortest form, are exactly what was written.
    expect([0.7, 2.7, 0.1, 8.123456, 999999.999999, 1e-6].map(microsOfNumber)).toEqual([
      700_000, 2_700_000, 100_000, 8_123_456, 999_999_999_999, 1,
    ]);
    expect([0.0000001, 0.30000000000000004, -1, Number.NaN].map(microsOfNumber)).toEqual([
      null,
      null,
      null,
      null,
    ]);
  });

  it("takes what Claude Code reports, or a float a run stored, to the nearest micro-dollar", () => {
    expect([0.123456789, 0.1234566, 0.0000004, 0, 2.01].map(microsOfDollars)).toEqual([
      123_457, 123_457, 0, 0, 2_010_000,
    ]);
    expect([-0.01, Infinity, 1e300, Number.NaN].map(microsOfDollars)).toEqual([null, null, null, null]);
  });

  it("takes a reported cost only when it is whole micro-dollars within bounds", () => {
    expect([0, 250_000, MAX_MICROS].map(isCost)).toEqual([true, true, true]);
    expect([-1, MAX_MICROS + 1, 1e303, 0.5, Infinity, Number.NaN].map(isCost)).toEqual([
      false,
      false,
      false,
      false,
      false,
      false,
    ]);
  });

  it("writes dollars for people, exactly where amounts are compared, and plainly for programs", () => {
    expect([250_000, 2_500, 2_000_000_000, 59_833_333, 166_666, 999_996, 0].map(usd)).toEqual([
      "$0.25",
      "$0.0025",
      "$2,000.00",
      "$59.83",
      "$0.1667",
      "$1.00",
      "$0.00",
    ]);
    expect([299_999, 300_000, 1_234_567_891].map(usdExact)).toEqual(["$0.299999", "$0.30", "$1,234.567891"]);
    expect([300_000, 1, 12_000_000].map(dollarsText)).toEqual(["0.300000", "0.000001", "12.000000"]);
  });
});
