import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { graphJsonSchema } from "../../src/graph/schema.ts";
import {
  CANONICAL_VALIDATOR,
  canonicalValidatorSource,
  PUBLISHED_SCHEMA,
  publishedSchemaText,
} from "../../scripts/schemas.ts";
import { REPO_ROOT } from "../support/fixtures.ts";

describe("what is generated from the zod schema (run `npm run schema` after changing it)", () => {
  it("the published JSON Schema is up to date", () => {
    expect(readFileSync(join(REPO_ROOT, PUBLISHED_SCHEMA), "utf8")).toBe(publishedSchemaText());
  });

  it("the canonical-form validator is up to date", () => {
    expect(readFileSync(join(REPO_ROOT, CANONICAL_VALIDATOR), "utf8")).toBe(canonicalValidatorSource());
  });

  it("describes the dialect's enums and strictness for editors", () => {
    const schema = graphJsonSchema() as {
      additionalProperties: boolean;
      required: string[];
      properties: { tasks: { items: { properties: { role: { anyOf?: unknown[]; enum?: string[] } } } } };
    };
    expect(schema.additionalProperties).toBe(false);
    expect(schema.required).toEqual(["name", "tasks"]);
    expect(JSON.stringify(schema.properties.tasks.items.properties.role)).toContain("test_reviewer");
  });
});
