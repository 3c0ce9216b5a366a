/**
 * Reads a graph file loading only what it needs: an agentrelay graph in canonical form (the usual
 * case) is checked by generated code and built without the schema library (zod) or the template
 * engine (MiniJinja, for cyberian workflows); any other file goes through the full loader (load.ts),
 * imported then. The command line uses this: `agentrelay validate` starts as fast as node does.
 */
import { agentrelayGraph } from "./agentrelay-model.ts";
import { isCanonicalGraphFile } from "./canonical.ts";
import { detectDialect, readGraphText } from "./dialect.ts";
import type { Graph } from "./model.ts";
import { refuseNul } from "./nul.ts";
import { DEFAULT_YAML_LIMITS, loadYaml, type YamlLimits } from "./yaml.ts";

export async function readGraphFile(file: string, limits: Partial<YamlLimits> = {}): Promise<Graph> {
  return readGraph(file, readGraphText(file), limits);
}

export async function readGraph(
  file: string,
  text: string,
  limits: Partial<YamlLimits> = {},
): Promise<Graph> {
  const yaml = loadYaml(file, text, { ...DEFAULT_YAML_LIMITS, ...limits });
  refuseNul(yaml);
  const value = yaml.value;
  const plain = value !== null && typeof value === "object" && !Array.isArray(value);
  if (plain && detectDialect(value) === "agentrelay" && isCanonicalGraphFile(value))
    return agentrelayGraph(yaml, value);
  const { compileGraph } = await import("./load.ts");
  return compileGraph(yaml);
}
