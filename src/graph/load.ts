/**
 * Entry point of the graph language: text in, a validated Graph (or a GraphError) out.
 * The dialect is detected from the root keys.
 */
import { compileAgentrelay } from "./agentrelay.ts";
import { compileCyberian } from "./cyberian.ts";
import { GraphError } from "./errors.ts";
import { detectDialect, readGraphText } from "./dialect.ts";
import type { Graph } from "./model.ts";
import { refuseNul } from "./nul.ts";
import { DEFAULT_YAML_LIMITS, type LoadedYaml, loadYaml, type YamlLimits } from "./yaml.ts";

export interface LoadOptions {
  limits?: Partial<YamlLimits>;
}

export { detectDialect };

/** Validates a loaded YAML document as a graph of its dialect. */
export function compileGraph(yaml: LoadedYaml): Graph {
  refuseNul(yaml);
  const root = yaml.value;
  if (root === null || typeof root !== "object" || Array.isArray(root)) {
    throw new GraphError([yaml.issue([], "", "the graph must be a mapping (YAML object) at the top level")]);
  }
  const dialect = detectDialect(root);
  if (dialect === "cyberian-farm") {
    throw new GraphError([
      yaml.issue(
        [],
        "",
        "this is a cyberian farm configuration (servers:), not a workflow; nothing here can run",
      ),
    ]);
  }
  return dialect === "cyberian" ? compileCyberian(yaml) : compileAgentrelay(yaml);
}

/** Parses and validates graph text; `file` is used in every error location. */
export function parseGraph(file: string, text: string, options: LoadOptions = {}): Graph {
  return compileGraph(loadYaml(file, text, { ...DEFAULT_YAML_LIMITS, ...options.limits }));
}

export function loadGraphFile(file: string, options: LoadOptions = {}): Graph {
  return parseGraph(file, readGraphText(file), options);
}
