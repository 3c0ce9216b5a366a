/**
 * How YAML scalars resolve in graph files: as PyYAML's `safe_load` does (YAML 1.1: `yes`/`on` are
 * booleans, `y`/`n` strings), because the graphs were written for Python tools; only the standard
 * scalar tags are allowed.
 */
import { NOT_RESOLVED, type ScalarTagDefinition, YAML11_SCHEMA } from "js-yaml";

/** The scalar tags a graph may name, with how each resolves ("str": as written). */
export const STANDARD_SCALAR_TAGS = new Map<string, ScalarTagDefinition<unknown> | "str">([["str", "str"]]);
for (const tag of YAML11_SCHEMA.implicitScalarTags) {
  const short = tag.tagName.replace("tag:yaml.org,2002:", "");
  if (["null", "bool", "int", "float"].includes(short)) STANDARD_SCALAR_TAGS.set(short, tag);
}

const NUMERIC_TAGS = YAML11_SCHEMA.implicitScalarTags.filter(
  (t) => t.tagName === "tag:yaml.org,2002:int" || t.tagName === "tag:yaml.org,2002:float",
);

/** PyYAML's booleans: unlike YAML 1.1's full list, `y` and `n` stay strings. */
const BOOLEANS = new Map<string, boolean>();
for (const word of ["yes", "true", "on"])
  for (const form of [word, word[0]!.toUpperCase() + word.slice(1), word.toUpperCase()])
    BOOLEANS.set(form, true);
for (const word of ["no", "false", "off"])
  for (const form of [word, word[0]!.toUpperCase() + word.slice(1), word.toUpperCase()])
    BOOLEANS.set(form, false);
/** PyYAML's nulls. */
export const NULLS = new Set(["", "~", "null", "Null", "NULL"]);

/** Resolves a plain scalar as PyYAML's safe_load does; timestamps stay strings, `<<` is a merge key. */
export function resolvePlain(source: string): unknown {
  if (NULLS.has(source)) return null;
  const bool = BOOLEANS.get(source);
  if (bool !== undefined) return bool;
  const first = source.charCodeAt(0);
  // Only digits, signs and '.' can start a number (".inf", ".nan" included): skip the regexes otherwise.
  const numeric = (first >= 48 && first <= 57) || first === 43 || first === 45 || first === 46;
  if (!numeric) return source;
  for (const tag of NUMERIC_TAGS) {
    const value = tag.resolve(source, false, tag.tagName);
    if (value !== NOT_RESOLVED) return value;
  }
  return source;
}
