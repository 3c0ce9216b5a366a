import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { graphJsonSchema } from "../../src/graph/schema.ts";
import { REPO_ROOT } from "../support/fixtures.ts";

describe("the published JSON Schema", () => {
  it("is up to date with the zod schema (run `npm run schema` after changing it)", () => {
    const committed = JSON.parse(
      readFileSync(join(REPO_ROOT, "schema/agentrelay-graph.schema.json"), "utf8"),
    );
    expect(committed).toEqual(graphJsonSchema());
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
