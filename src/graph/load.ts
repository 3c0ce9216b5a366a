/**
 * Entry point of the graph language: text in, a validated Graph (or a GraphError) out.
 * The dialect is detected from the root keys.
 */
import { readFileSync } from "node:fs";
import { compileAgentrelay } from "./agentrelay.ts";
import { compileCyberian } from "./cyberian.ts";
import { GraphError } from "./errors.ts";
import type { Dialect, Graph } from "./model.ts";
import { DEFAULT_YAML_LIMITS, type LoadedYaml, loadYaml, type YamlLimits } from "./yaml.ts";

export interface LoadOptions {
  limits?: Partial<YamlLimits>;
}

const CYBERIAN_KEYS = [
  "subtasks",
  "instructions",
  "system_instructions",
  "params",
  "provider_call",
  "loop_until",
  "success_criteria",
  "agent_lifecycle",
  "preconditions",
  "requirements",
  "requires_workdir",
];

export function detectDialect(value: unknown): Dialect | "cyberian-farm" {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return "agentrelay";
  const keys = Object.keys(value);
  if (keys.includes("tasks")) return "agentrelay";
  if (keys.some((k) => CYBERIAN_KEYS.includes(k))) return "cyberian";
  if (keys.includes("servers") || keys.includes("base_port")) return "cyberian-farm";
  return "agentrelay";
}

/** Validates a loaded YAML document as a graph of its dialect. */
export function compileGraph(yaml: LoadedYaml): Graph {
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
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code === "ENOENT" ? "no such file" : String(error);
    throw new GraphError([
      { file, line: 1, column: 1, path: "", message: `cannot read the file: ${reason}` },
    ]);
  }
  return parseGraph(file, text, options);
}
