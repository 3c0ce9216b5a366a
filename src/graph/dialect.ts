/** Which dialect a graph file is written in, from its root keys; and reading its text. */
import { readFileSync } from "node:fs";
import { GraphError } from "./errors.ts";
import type { Dialect } from "./model.ts";

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

/** A graph file's text; a file that cannot be read is a located error like any other. */
export function readGraphText(file: string): string {
  try {
    return readFileSync(file, "utf8");
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const reason =
      code === "ENOENT" ? "no such file" : code === "EISDIR" ? "it is a directory" : String(error);
    throw new GraphError([
      { file, line: 1, column: 1, path: "", message: `cannot read the file: ${reason}` },
    ]);
  }
}
