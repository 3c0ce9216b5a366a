/**
 * Checks a request against GitHub's OpenAPI description (the committed subset of the operations we
 * call): the path must be a known operation, query parameters must exist, and the JSON body must
 * match the operation's schema with no property the operation does not define.
 */
import { existsSync, readFileSync } from "node:fs";
import { Ajv, type ValidateFunction } from "ajv";
import { graphqlProblem } from "./graphql-schema.ts";

interface Operation {
  operationId: string;
  query: string[];
  body: Record<string, unknown> | null;
}

// Beside this file in harness/, or from lib/ when bundled into the bench.
const subsetFile = ["./github-openapi-subset.json", "../harness/github-openapi-subset.json"]
  .map((path) => new URL(path, import.meta.url))
  .find((url) => existsSync(url))!;
const subset = JSON.parse(readFileSync(subsetFile, "utf8")) as {
  operations: Record<string, Operation>;
};
/** OpenAPI 3.0's `nullable` next to `anyOf`/`oneOf` (no `type`) is not JSON Schema: drop it there. */
function jsonSchema(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(jsonSchema);
  if (node === null || typeof node !== "object") return node;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(node)) out[key] = jsonSchema(value);
  if ("nullable" in out && !("type" in out)) delete out.nullable;
  return out;
}

const ajv = new Ajv({ strict: false, allErrors: true, validateFormats: false });
const compiled = new Map<string, ValidateFunction>();

const operations = Object.entries(subset.operations).map(([key, op]) => {
  const [method, template] = key.split(" ") as [string, string];
  // {path}, {ref} and {branch} may hold slashes (contents paths, git refs, branch names); others may not.
  const pattern = new RegExp(
    `^${template.replace(/\{(path|ref|basehead|branch)\}/g, ".+").replace(/\{[a-z_]+\}/g, "[^/]+")}$`,
  );
  return { key, method, pattern, op };
});

export class OpenApiError extends Error {
  override name = "OpenApiError";
}

export function checkRequest(method: string, url: string, body: unknown): void {
  const [path = "", search = ""] = url.split("?");
  if (path === "/graphql") {
    const request = (body ?? {}) as { query?: unknown; variables?: Record<string, unknown> };
    const problem = graphqlProblem(String(request.query ?? ""), request.variables ?? {});
    if (problem) throw new OpenApiError(`POST /graphql: GitHub's schema refuses the document: ${problem}`);
    return;
  }
  const match = operations.find((o) => o.method === method && o.pattern.test(decodeURIComponent(path)));
  if (!match) throw new OpenApiError(`${method} ${path} is not an operation of the GitHub API subset`);
  for (const name of new URLSearchParams(search).keys()) {
    if (!match.op.query.includes(name))
      throw new OpenApiError(`${match.key}: unknown query parameter '${name}'`);
  }
  const schema = match.op.body;
  if (!schema || body === undefined) return;
  let validate = compiled.get(match.key);
  if (!validate) compiled.set(match.key, (validate = ajv.compile(jsonSchema(schema) as object)));
  if (!validate(body)) {
    throw new OpenApiError(
      `${match.key}: ${ajv.errorsText(validate.errors)} in ${JSON.stringify(body).slice(0, 300)}`,
    );
  }
  const known = (schema.properties ?? {}) as Record<string, unknown>;
  for (const name of Object.keys((body ?? {}) as object)) {
    if (!(name in known))
      throw new OpenApiError(`${match.key}: the body has '${name}', which the operation does not define`);
  }
}
