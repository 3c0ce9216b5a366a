/**
 * The loader's first check: is a parsed graph file already what zod would return (strings trimmed,
 * enum values in their canonical spelling, nothing unknown)? Then it is taken as it is, with no
 * schema library loaded and nothing allocated. The check is ajv's code generated from the zod schema
 * (`npm run schema`; schema.ts's `canonicalForm` says what canonical means), so zod stays the one source.
 */
import { validate } from "./canonical-graph.generated.js";
import type { GraphFile } from "./schema.ts";

export const isCanonicalGraphFile = validate as (value: unknown) => value is GraphFile;
