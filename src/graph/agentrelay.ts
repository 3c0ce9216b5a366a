/**
 * The agentrelay dialect: a parsed YAML value -> the internal Graph. A file already in canonical form
 * (what zod would return unchanged, checked by generated code) is taken as it is; any other is parsed
 * by zod, which also writes the errors. Then agentrelay-model.ts builds and checks the graph.
 */
import { agentrelayGraph } from "./agentrelay-model.ts";
import { isCanonicalGraphFile } from "./canonical.ts";
import type { Graph } from "./model.ts";
import { graphFileSchema } from "./schema.ts";
import { parseAndBuild } from "./schema-issues.ts";
import type { LoadedYaml } from "./yaml.ts";

export function compileAgentrelay(yaml: LoadedYaml): Graph {
  if (isCanonicalGraphFile(yaml.value)) return agentrelayGraph(yaml, yaml.value);
  return parseAndBuild(graphFileSchema, yaml, (file) => agentrelayGraph(yaml, file));
}
