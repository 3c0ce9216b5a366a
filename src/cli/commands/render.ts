import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { formatIssue, GraphError, type GraphIssue, type PathSegment } from "../../graph/errors.ts";
import { readGraphFile } from "../../graph/read.ts";
import type { Graph } from "../../graph/model.ts";
import { mergeParams, type Params, parseParamsFile } from "../../graph/params.ts";
import { loadYaml, type LoadedYaml } from "../../graph/yaml.ts";
import { missingParams, ParamsError, renderCyberian } from "../../protocol/cyberian-prompt.ts";
import { paramsFileOf } from "../../protocol/run-source.ts";
import { renderInstructions, renderManifest, renderPolicies } from "../../protocol/render.ts";
import { checkKnown, type Io, UsageError } from "../io.ts";

export interface RenderOptions {
  attempt: number;
  out?: string | undefined;
  params: Record<string, unknown>;
}

/**
 * A cyberian workflow's param values: its params file beside it (`<workflow>.params.yaml`), then
 * `--param` values, which win. The file is read with the graph loader's YAML (located errors).
 */
export function workflowParams(file: string, given: Params): Params {
  const paramsFile = paramsFileOf(file);
  return mergeParams(
    parseParamsFile(paramsFile, existsSync(paramsFile) ? readFileSync(paramsFile, "utf8") : null),
    given,
  );
}

/**
 * What keeps a cyberian workflow from rendering with these params, as located errors: a required
 * param without a value, and a template that uses a variable without one (or fails otherwise).
 */
export function paramErrors(graph: Graph, params: Params): GraphError | null {
  const byName = new Map((graph.cyberian?.params ?? []).map((p) => [p.name, p]));
  const missing = missingParams(graph, params).map((name) => ({
    file: graph.file,
    ...byName.get(name)!.at,
    path: `params.${name}`,
    message: `required param '${name}' has no value (give it with --param ${name}=VALUE)`,
  }));
  if (missing.length > 0) return new GraphError(missing);
  const issues = new Map<string, GraphIssue>();
  let yaml: LoadedYaml | undefined;
  const located = () => (yaml ??= loadYaml(graph.file, readFileSync(graph.file, "utf8")));
  for (const task of graph.tasks) {
    const step = task.cyberian;
    if (!step) continue;
    const at = step.path.flatMap((key) => ["subtasks", key]);
    // Inherited system instructions are reported where they are written: the nearest node above.
    let system = at;
    while (system.length > 0 && !hasKey(located().value, [...system, "system_instructions"]))
      system = system.slice(0, -2);
    const fields: [string | null, PathSegment[], Params][] = [
      [step.systemInstructions, [...system, "system_instructions"], params],
      [step.instructions, [...at, "instructions"], params],
      [
        step.successCriteria?.retryMessage ?? null,
        [...at, "success_criteria", "retry_message"],
        { ...params, error: "" },
      ],
      [step.providerCall?.outputFile ?? null, [...at, "provider_call", "output_file"], params],
    ];
    for (const [source, path, values] of fields) {
      const where = path.join(".");
      if (source === null || issues.has(where)) continue;
      try {
        renderCyberian(source, values, where);
      } catch (error) {
        if (!(error instanceof ParamsError)) throw error;
        issues.set(where, located().issue(path, where, error.message.slice(where.length + 2)));
      }
    }
  }
  return issues.size > 0 ? new GraphError([...issues.values()]) : null;
}

function hasKey(root: unknown, path: PathSegment[]): boolean {
  let node = root;
  for (const key of path) {
    if (node === null || typeof node !== "object") return false;
    node = (node as Record<string, unknown>)[key as string];
  }
  return node !== undefined;
}

/** `agentrelay render FILE TASK_ID [--attempt N] [--out DIR]`: writes the three protocol files. */
export async function renderCommand(
  file: string,
  taskId: string,
  options: RenderOptions,
  io: Io,
): Promise<number> {
  const graph = await readGraphFile(file);
  checkKnown(
    "task",
    taskId,
    graph.tasks.map((t) => t.id),
    `${file}: `,
  );
  const task = graph.tasks.find((t) => t.id === taskId)!;
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
