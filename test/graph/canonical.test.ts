import { readFileSync } from "node:fs";
import { isDeepStrictEqual } from "node:util";
import { describe, expect, it } from "vitest";
import { isCanonicalGraphFile } from "../../src/graph/canonical.ts";
import { detectDialect } from "../../src/graph/load.ts";
import { graphFileSchema } from "../../src/graph/schema.ts";
import { DEFAULT_YAML_LIMITS, loadYaml } from "../../src/graph/yaml.ts";
import { fixture, yamlFiles } from "../support/fixtures.ts";
import { RULE_CASES } from "./rules.cases.ts";
import { NO_FIXTURES } from "../support/skips.ts";

const parsed = (text: string): unknown => loadYaml("t.yaml", text, DEFAULT_YAML_LIMITS).value;

/** What the canonical check must answer: zod accepts the value and returns an equal tree. */
function zodKeepsAsIs(value: unknown): boolean {
  const result = graphFileSchema.safeParse(structuredClone(value));
  return result.success && isDeepStrictEqual(result.data, value);
}

function expectAgreement(value: unknown): boolean {
  const verdict = isCanonicalGraphFile(value);
  expect(verdict, JSON.stringify(value)).toBe(zodKeepsAsIs(value));
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

describe("the canonical form (a graph file zod would return unchanged, checked without zod)", () => {
  it("accepts a graph zod would return unchanged", () => {
    expect(expectAgreement(parsed(GRAPH))).toBe(true);
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
    expect(expectAgreement(parsed(GRAPH.replace(from, to)))).toBe(false);
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
        expectAgreement(value);
    }
  });

  it("follows zod on every agentrelay graph in the fixtures", (context) => {
    if (NO_FIXTURES) context.skip(NO_FIXTURES);
    const files = yamlFiles("agentrelay", "graphs");
    expect(files.length).toBeGreaterThanOrEqual(20);
    let canonical = 0;
    for (const file of files)
      if (expectAgreement(parsed(readFileSync(fixture("agentrelay", "graphs", file), "utf8")))) canonical++;
    // Real files are written in the canonical form: the loader then never needs zod.
    expect(canonical).toBe(files.length);
  });
});
