import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { formatIssue, GraphError } from "../../graph/errors.ts";
import { readGraphFile } from "../../graph/read.ts";
import type { Graph } from "../../graph/model.ts";
import { loadYaml } from "../../graph/yaml.ts";
import { missingParams } from "../../protocol/cyberian-prompt.ts";
import { paramsFileOf } from "../../protocol/run-source.ts";
import { renderInstructions, renderManifest, renderPolicies } from "../../protocol/render.ts";
import { type Io, UsageError } from "../io.ts";

export interface RenderOptions {
  attempt: number;
  out?: string | undefined;
  params: Record<string, unknown>;
}

/**
 * A cyberian workflow's param values: its params file beside it (`<workflow>.params.yaml`), then
 * `--param` values, which win. The file is read with the graph loader's YAML (located errors).
 */
export function workflowParams(file: string, given: Record<string, unknown>): Record<string, unknown> {
  const paramsFile = paramsFileOf(file);
  const fromFile = existsSync(paramsFile) ? loadYaml(paramsFile, readFileSync(paramsFile, "utf8")).value : {};
  return { ...(fromFile as Record<string, unknown>), ...given };
}

/** Required cyberian params without a value, as located errors. */
export function paramErrors(graph: Graph, params: Record<string, unknown>): GraphError | null {
  const missing = missingParams(graph, params);
  if (missing.length === 0) return null;
  const byName = new Map((graph.cyberian?.params ?? []).map((p) => [p.name, p]));
  return new GraphError(
    missing.map((name) => ({
      file: graph.file,
      ...byName.get(name)!.at,
      path: `params.${name}`,
      message: `required param '${name}' has no value (give it with --param ${name}=VALUE)`,
    })),
  );
}

/** `agentrelay render FILE TASK_ID [--attempt N] [--out DIR]`: writes the three protocol files. */
export async function renderCommand(
  file: string,
  taskId: string,
  options: RenderOptions,
  io: Io,
): Promise<number> {
  const graph = await readGraphFile(file);
  const task = graph.tasks.find((t) => t.id === taskId);
  if (!task)
    throw new UsageError(`${file}: no task '${taskId}' (tasks: ${graph.tasks.map((t) => t.id).join(", ")})`);
  if (!Number.isInteger(options.attempt) || options.attempt < 1)
    throw new UsageError("--attempt must be a whole number from 1");
  const params = workflowParams(file, options.params);
  const problems = paramErrors(graph, params);
  if (problems) {
    for (const issue of problems.issues) io.out(formatIssue(issue));
    return 1;
  }
  const out = resolve(options.out ?? join("agentrelay-render", task.id));
  const ctx = {
    graph,
    task,
    attempt: options.attempt,
    repoDir: process.cwd(),
    workDir: out,
    inputFiles: [],
    params,
  };
  const instructions = renderInstructions(ctx);
  mkdirSync(out, { recursive: true });
  writeFileSync(join(out, "manifest.json"), `${JSON.stringify(renderManifest(ctx), null, 2)}\n`);
  writeFileSync(join(out, "policies.json"), `${JSON.stringify(renderPolicies(ctx), null, 2)}\n`);
  writeFileSync(join(out, "instructions.md"), instructions);
  io.err(`wrote manifest.json, policies.json and instructions.md to ${out}`);
  return 0;
}
