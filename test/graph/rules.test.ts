import { describe, expect, it } from "vitest";
import { GraphError } from "../../src/graph/errors.ts";
import { parseGraph } from "../../src/graph/load.ts";
import { RULE_CASES } from "./rules.cases.ts";

function errorsOf(yaml: string): string[] {
  try {
    parseGraph("case.yaml", yaml);
  } catch (error) {
    if (!(error instanceof GraphError)) throw error;
    return error.issues.map((i) => `${i.line}:${i.column}: ${i.path ? `${i.path}: ` : ""}${i.message}`);
  }
  return [];
}

describe("validation rules", () => {
  it.each(RULE_CASES)("$rule", ({ yaml, errors }) => {
    expect(errorsOf(yaml)).toEqual(errors);
  });

  it("formats each error as FILE:LINE:COL: message", () => {
    expect(() => parseGraph("graphs/g.yaml", "name: g\ntasks: []\n")).toThrow(
      "graphs/g.yaml:2:8: tasks: must contain at least one task",
    );
  });
});
