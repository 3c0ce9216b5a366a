/** Amounts of US dollars, as every path that takes one reads them (graph/amount.ts). */
import { describe, expect, it } from "vitest";
import { isCost, MAX_USD, parseUsd } from "../../src/graph/amount.ts";

describe("an amount of US dollars", () => {
  it.each([
    ["5", 5],
    ["0.50", 0.5],
    ["$12.25", 12.25],
    ["1000000", 1_000_000],
    ["0.000001", 0.000001],
  ])("reads the plain decimal %s", (text, usd) => {
    expect(parseUsd(text)).toEqual({ usd });
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

  it("takes a reported cost only when it is finite and within bounds", () => {
    expect([0, 0.25, MAX_USD].map(isCost)).toEqual([true, true, true]);
    expect([-0.01, MAX_USD + 1, 1e303, Infinity, Number.NaN].map(isCost)).toEqual([
      false,
      false,
      false,
      false,
      false,
    ]);
  });
});
