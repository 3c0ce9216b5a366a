/**
 * Values for a cyberian workflow's params, as cyberian reads them: from `key=value` words (the CLI's
 * `--param`, the `/agentrelay run` comment), each value a YAML scalar (`10` a number, `yes` a
 * boolean, `null` and nothing at all None, anything else text), and from the workflow's params file
 * (a YAML mapping).
 *
 * Python keeps `1.0` a float; a JavaScript number cannot. The names of params whose value is a
 * whole-valued float are kept beside the values, under FLOAT_PARAMS, so that templates print `1.0`
 * as cyberian does (see template/python.ts). The key travels with the values through every JSON
 * hop and is never a param itself.
 */
import { GraphError } from "./errors.ts";
import { DEFAULT_YAML_LIMITS, loadYaml } from "./yaml.ts";
import { NULLS } from "./yaml-scalars.ts";

export type Params = Record<string, unknown>;

export const FLOAT_PARAMS = "__agentrelay_float_params__";

export class ParamPairError extends Error {
  override name = "ParamPairError";
  constructor(readonly pair: string) {
    super(`expected key=value, got '${pair}'`);
  }
}

/** A YAML float written with a whole value (`1.0`, `2e3`, `-0.0`). */
const WHOLE_FLOAT = /^[-+]?(\d[\d_]*)?(\.[\d_]*([eE][-+]?\d+)?|[eE][-+]?\d+)$/;

const isWholeFloat = (raw: string, value: unknown) =>
  typeof value === "number" && Number.isInteger(value) && WHOLE_FLOAT.test(raw.trim());

/** A value as PyYAML's safe_load reads it: `null`, `~` and nothing at all are None, `y` stays text. */
export function paramValue(raw: string): unknown {
  // The loader refuses an empty document; as a value, it is None.
  if (NULLS.has(raw.trim())) return null;
  try {
    return loadYaml("--param", raw).value;
  } catch {
    return raw;
  }
}

function withFloats(params: Params, floats: string[]): Params {
  return floats.length ? { ...params, [FLOAT_PARAMS]: floats } : params;
}

/** Each word is split at its first `=`; a word without a key before it is a ParamPairError. */
export function parseParamPairs(pairs: readonly string[]): Params {
  const params: Params = {};
  const floats: string[] = [];
  for (const pair of pairs) {
    const at = pair.indexOf("=");
    if (at <= 0) throw new ParamPairError(pair);
    const key = pair.slice(0, at).trim();
    const raw = pair.slice(at + 1).trim();
    params[key] = paramValue(raw);
    if (isWholeFloat(raw, params[key])) floats.push(key);
  }
  return withFloats(params, floats);
}

/** A params file's values (a YAML mapping; none when the file is empty or absent). */
export function parseParamsFile(file: string, text: string | null): Params {
  if (text === null) return {};
  const yaml = loadYaml(file, text, DEFAULT_YAML_LIMITS);
  const value = yaml.value;
  if (value === null || value === undefined) return {};
  if (typeof value !== "object" || Array.isArray(value))
    throw new GraphError([yaml.issue([], "", "a params file must be a mapping of param names to values")]);
  const floats = Object.entries(value).flatMap(([key, v]) => {
    if (typeof v !== "number" || !Number.isInteger(v)) return [];
    const at = yaml.locate([key]);
    const line = text.split("\n")[at.line - 1] ?? "";
    return isWholeFloat(line.slice(at.column - 1).replace(/\s+#.*$/, ""), v) ? [key] : [];
  });
  return withFloats(value as Params, floats);
}

/** Params given later win; the float names follow the values they belong to. */
export function mergeParams(...sources: Params[]): Params {
  const merged: Params = {};
  const floats = new Set<string>();
  for (const source of sources) {
    for (const [key, value] of Object.entries(source)) {
      if (key === FLOAT_PARAMS) continue;
      merged[key] = value;
      floats.delete(key);
    }
    for (const name of (source[FLOAT_PARAMS] as string[] | undefined) ?? []) floats.add(name);
  }
  return withFloats(merged, [...floats]);
}

/** The values a template sees, and the names of the whole-valued floats among them. */
export function templateValues(params: Params): { values: Params; floats: string[] } {
  const { [FLOAT_PARAMS]: floats, ...values } = params;
  return { values, floats: (floats as string[] | undefined) ?? [] };
}
