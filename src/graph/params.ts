/**
 * Values for a cyberian workflow's params given as `key=value` words (the CLI's `--param`, the
 * `/agentrelay run` comment). Values are YAML 1.1 scalars, as cyberian reads them: `10` is a
 * number, `yes` a boolean, anything else stays text.
 */
import { load, YAML11_SCHEMA } from "js-yaml";

export class ParamPairError extends Error {
  override name = "ParamPairError";
  constructor(readonly pair: string) {
    super(`expected key=value, got '${pair}'`);
  }
}

export function paramValue(raw: string): unknown {
  try {
    return load(raw, { schema: YAML11_SCHEMA }) ?? raw;
  } catch {
    return raw;
  }
}

/** Each word is split at its first `=`; a word without a key before it is a ParamPairError. */
export function parseParamPairs(pairs: readonly string[]): Record<string, unknown> {
  const params: Record<string, unknown> = {};
  for (const pair of pairs) {
    const at = pair.indexOf("=");
    if (at <= 0) throw new ParamPairError(pair);
    params[pair.slice(0, at).trim()] = paramValue(pair.slice(at + 1).trim());
  }
  return params;
}
