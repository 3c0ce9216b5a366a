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

describe("a NUL in a graph string (security case 77)", () => {
  const AGENTRELAY =
    'name: g\ntasks:\n  - id: a\n    description: writes a\n    completion_gate: "npm test\\0 --x"\n';
  const CYBERIAN = 'name: w\nsubtasks:\n  s:\n    instructions: "do it\\0"\n';
  it.each([
    ["an agentrelay graph", AGENTRELAY, "5:22: tasks[0].completion_gate: may not contain a NUL character"],
    ["a cyberian workflow", CYBERIAN, "4:19: subtasks.s.instructions: may not contain a NUL character"],
  ])("is refused in %s at its line and field", (_, yaml, error) => {
    expect(errorsOf(yaml)[0]).toContain(error);
  });

  // The loader looks for NULs only where one can be (an escape of a double-quoted scalar): each escape, in a key too.
  it.each([
    ["\\x00", "description", "4:18: tasks[0].description"],
    ["\\u0000", "description", "4:18: tasks[0].description"],
    ["\\U00000000", "description", "4:18: tasks[0].description"],
  ])("is found written as %s", async (escape, field, where) => {
    const { readGraph } = await import("../../src/graph/read.ts");
    const text = `name: g\ntasks:\n  - id: a\n    ${field}: "a${escape}"\n`;
    await expect(readGraph("g.yaml", text)).rejects.toThrow(
      `g.yaml:${where}: may not contain a NUL character`,
    );
  });

  it("is found in a quoted key", () => {
    const text = 'name: g\ntasks:\n  - id: a\n    description: x\n    "k\\0": 1\n';
    expect(errorsOf(text).join("\n")).toContain("may not contain a NUL character");
  });

  it("is refused on the canonical fast path too", async () => {
    const { readGraph } = await import("../../src/graph/read.ts");
    const canonical = 'name: g\ntasks:\n  - id: a\n    description: "a\\0"\n';
    await expect(readGraph("g.yaml", canonical)).rejects.toThrow(
      "g.yaml:4:18: tasks[0].description: may not contain a NUL character",
    );
  });
});
