import { readFileSync } from "node:fs";
import { isDeepStrictEqual } from "node:util";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { acceptsAsIs, safeParseAsIs } from "../../src/graph/as-is.ts";
import { detectDialect } from "../../src/graph/load.ts";
import { graphFileSchema } from "../../src/graph/schema.ts";
import { DEFAULT_YAML_LIMITS, loadYaml } from "../../src/graph/yaml.ts";
import { fixture, yamlFiles } from "../support/fixtures.ts";
import { RULE_CASES } from "./rules.cases.ts";

const parsed = (text: string): unknown => loadYaml("t.yaml", text, DEFAULT_YAML_LIMITS).value;

/** What `acceptsAsIs` must answer: zod accepts the value and returns an equal tree. */
function zodKeepsAsIs(schema: z.core.$ZodType, value: unknown): boolean {
  const result = z.safeParse(schema, structuredClone(value));
  return result.success && isDeepStrictEqual(result.data, value);
}

function expectAgreement(schema: z.core.$ZodType, value: unknown): boolean {
  const verdict = acceptsAsIs(schema)(value);
  expect(verdict, JSON.stringify(value)).toBe(zodKeepsAsIs(schema, value));
  return verdict;
}

const GRAPH = `name: g
model: claude-sonnet
max_concurrency: 2
isolation: { sandbox: oci, token_tier: standard }
workstreams:
  - id: core
    auto_merge: true
  - id: docs
    parent_workstream_id: core
tasks:
  - id: spec
    workstream_id: core
    role: spec_writer
    description: Write the spec.
    paths: { spec: docs/spec.md }
  - id: impl
    workstream_id: core
    role: implementer
    dependencies: [spec]
    tagged_paths: [{ path: src/a.ts, category: src }]
    completion_gate: npm test
    max_gate_attempts: 3
    primary_agent: { model: opus, adr_verbosity: standard, isolation: { image: node:20 } }
    review: { agent: null, review_on_attempt: 2 }
    inputs_from: [{ task: spec, category: spec }]
  - id: guide
    workstream_id: docs
    description: null
    dependencies: [impl]
    inputs_from: { task: spec }
`;

describe("acceptsAsIs (zod's accept path without building its output)", () => {
  it("accepts a graph zod would return unchanged, and safeParseAsIs hands back that very value", () => {
    const value = parsed(GRAPH);
    expect(expectAgreement(graphFileSchema, value)).toBe(true);
    const result = safeParseAsIs(graphFileSchema, value);
    expect(result.success && result.data).toBe(value);
  });

  // Each edit makes zod reject the graph or change it; the verdict must follow zod either way.
  const EDITS: [string, string, string][] = [
    ["an unknown key", "auto_merge: true", "auto_merge: true\n    colour: red"],
    ["a missing required key", "  - id: guide\n", "  - \n"],
    ["a padded string zod trims", "role: implementer", "role: ' implementer'"],
    ["an enum written by its name", "role: implementer", "role: IMPLEMENTER"],
    ["an unknown enum value", "role: implementer", "role: painter"],
    ["an empty string", "completion_gate: npm test", "completion_gate: ' '"],
    ["a number for a string", "description: Write the spec.", "description: 12"],
    ["a float for an integer", "max_gate_attempts: 3", "max_gate_attempts: 1.5"],
    ["zero for a positive integer", "max_concurrency: 2", "max_concurrency: 0"],
    ["a string in a boolean field", "auto_merge: true", "auto_merge: 'true'"],
    ["null where only a value is allowed", "auto_merge: true", "auto_merge: null"],
    ["a list item of the wrong type", "dependencies: [spec]", "dependencies: [spec, 3]"],
    ["a mapping where a list is required", "dependencies: [impl]", "dependencies: { impl: 1 }"],
    ["a union member zod changes", "inputs_from: { task: spec }", "inputs_from: { task: ' spec' }"],
    ["a union member zod rejects", "inputs_from: { task: spec }", "inputs_from: [spec]"],
    ["an empty list that must have items", "workstreams:\n  - id: core", "workstreams: []\nx:\n  - id: core"],
  ];
  it.each(EDITS)("follows zod for %s", (_, from, to) => {
    expect(GRAPH).toContain(from);
    expect(expectAgreement(graphFileSchema, parsed(GRAPH.replace(from, to)))).toBe(false);
  });

  it("follows zod on every validation-rule case", () => {
    for (const { yaml } of RULE_CASES) {
      let value: unknown;
      try {
        value = parsed(yaml);
      } catch {
        continue; // not YAML at all: never reaches the schema
      }
      if (value !== null && typeof value === "object" && detectDialect(value) === "agentrelay")
        expectAgreement(graphFileSchema, value);
    }
  });

  it("follows zod on every agentrelay graph in the fixtures", () => {
    for (const file of yamlFiles("agentrelay", "graphs")) {
      expectAgreement(graphFileSchema, parsed(readFileSync(fixture("agentrelay", "graphs", file), "utf8")));
    }
  });

  it("answers false for what it does not model (defaults, extra keys, transforms), leaving it to zod", () => {
    const cases: [z.core.$ZodType, unknown][] = [
      [z.object({ a: z.string().default("x") }), {}],
      [z.object({ a: z.string() }), { a: "x", b: 1 }],
      [z.looseObject({ a: z.string() }), { a: "x", b: 1 }],
      [z.strictObject({ a: z.string().transform((s) => s) }), { a: "x" }],
      [z.array(z.string()).min(2), ["x"]],
      [z.union([z.string().trim(), z.string()]), " x"],
      [z.xor([z.string(), z.string().min(1)]), "x"],
    ];
    for (const [schema, value] of cases)
      expect(acceptsAsIs(schema)(value), JSON.stringify(value)).toBe(false);
  });

  it("walks optional, nullable and recursive schemas as zod does", () => {
    const node: z.ZodType<{ name: string; children?: unknown[] | null }> = z.strictObject({
      name: z.string().min(1),
      get children() {
        return z.array(node).nullish();
      },
    });
    const tree = { name: "a", children: [{ name: "b", children: null }, { name: "c" }] };
    expect(expectAgreement(node, tree)).toBe(true);
    expect(expectAgreement(node, { name: "a", children: [{ name: "" }] })).toBe(false);
    expect(expectAgreement(z.strictObject({ a: z.int().optional() }), {})).toBe(true);
    expect(expectAgreement(z.strictObject({ a: z.int() }), {})).toBe(false);
    expect(expectAgreement(z.int(), 2.5)).toBe(false);
  });
});
