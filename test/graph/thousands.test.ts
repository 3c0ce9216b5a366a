import fc from "fast-check";
import { expect, it } from "vitest";
import { count, thousands } from "../../src/graph/model.ts";

it("writes a number's thousands as toLocaleString('en-US') does, without asking ICU", () => {
  fc.assert(
    fc.property(fc.oneof(fc.integer(), fc.maxSafeInteger(), fc.double({ noNaN: true })), (n) => {
      expect(thousands(n)).toBe(n.toLocaleString("en-US"));
    }),
  );
  expect([0, -0, 999, 1_000, -1_234_567].map(thousands)).toEqual(["0", "-0", "999", "1,000", "-1,234,567"]);
  expect(count(10_000, "task")).toBe("10,000 tasks");
});
