/**
 * The cyberian dialect: a tree of templated subtasks compiled into the internal Graph.
 *
 * Every task that does something (has `instructions` or a `provider_call`) becomes one graph task, in
 * depth-first pre-order (a parent's own instructions run before its subtasks, as in cyberian); the
 * tasks form a dependency chain in one workstream, and each id is its subtask path joined with `.`.
 * Key order is the order written in the file, even for numeric keys.
 */

import { templateSyntaxError } from "../template/jinja.ts";
import { replaceBlocks } from "../template/blocks.ts";
import { type CyberianTaskFile, cyberianTaskSchema } from "./cyberian-schema.ts";
import { GraphError, type PathSegment } from "./errors.ts";
import {
  type CyberianParam,
  type CyberianStep,
  DEFAULT_ISOLATION,
  DEFAULT_NETWORK,
  DEFAULT_SETTINGS,
  defaultWorkstream,
  type Graph,
  type Task,
} from "./model.ts";
import { parseAndBuild } from "./schema-issues.ts";
import { IssueList, pathProblem, validateStructure, type Where } from "./validate.ts";
import type { LoadedYaml } from "./yaml.ts";

/** Id of the root task's own step, when the root itself has instructions. */
export const ROOT_STEP_ID = "root";

interface Step {
  task: Task;
  yamlPath: PathSegment[];
}

export function compileCyberian(yaml: LoadedYaml): Graph {
  return parseAndBuild(cyberianTaskSchema, yaml, (root) => cyberianGraph(yaml, root));
}

function cyberianGraph(yaml: LoadedYaml, root: CyberianTaskFile): Graph {
  const issues = new IssueList(yaml);
  const steps: Step[] = [];
  /** Which subtask each generated id came from: ids join names with '.', so two can meet. */
  const idOwners = new Map<string, { keys: string[]; yamlPath: PathSegment[] }>();
  // A container's file preconditions are checked before the first step inside it runs.
  let pendingPatterns: { patterns: string[]; minCount: number | null }[] = [];

  const checkTemplate = (source: string | null | undefined, path: PathSegment[]) => {
    if (source == null) return;
    const problem = templateSyntaxError(source);
    if (problem) issues.add(path, `template error: ${problem}`);
  };

  /** A path the step reads or writes stays in the repository (its templated parts are checked when they render). */
  const checkPath = (path: string | null | undefined, at: PathSegment[]) => {
    if (path == null) return;
    const literal = replaceBlocks(path, () => "x");
    const problem = pathProblem(literal) ? pathProblem(path) : null;
    if (problem) issues.add(at, problem);
  };

  const visit = (
    node: CyberianTaskFile,
    raw: Record<string, unknown>,
    keys: string[],
    yamlPath: PathSegment[],
    inheritedSystem: string | null,
  ) => {
    const system = node.system_instructions ?? inheritedSystem;
    checkTemplate(node.system_instructions, [...yamlPath, "system_instructions"]);
    checkTemplate(node.instructions, [...yamlPath, "instructions"]);
    const criteria = node.success_criteria;
    if (criteria) {
      if ((criteria.python == null) === (criteria.script == null)) {
        issues.add([...yamlPath, "success_criteria"], "needs exactly one of 'python' or 'script'");
      }
      checkTemplate(criteria.python, [...yamlPath, "success_criteria", "python"]);
      checkPath(criteria.script, [...yamlPath, "success_criteria", "script"]);
      checkTemplate(criteria.retry_message, [...yamlPath, "success_criteria", "retry_message"]);
    }
    if (node.provider_call) {
      checkTemplate(node.provider_call.output_file, [...yamlPath, "provider_call", "output_file"]);
      checkPath(node.provider_call.output_file, [...yamlPath, "provider_call", "output_file"]);
      for (const [key, value] of Object.entries(node.provider_call.params ?? {})) {
        if (typeof value === "string") checkTemplate(value, [...yamlPath, "provider_call", "params", key]);
      }
      if (node.instructions) {
        issues.add(
          [...yamlPath, "provider_call"],
          "a task has either 'instructions' or a 'provider_call', not both",
          "key",
        );
      }
    }
    if (node.loop_until && !node.instructions) {
      issues.add([...yamlPath, "loop_until"], "'loop_until' needs 'instructions' on the same task", "key");
    }

    const files = node.preconditions?.files_exist;
    if (files) pendingPatterns.push({ patterns: files.patterns, minCount: files.min_count ?? null });

    // Empty instructions are none, as cyberian skips them (`if task.instructions:`).
    if (node.instructions || node.provider_call) {
      const id = keys.length === 0 ? ROOT_STEP_ID : keys.join(".");
      const owner = idOwners.get(id);
      if (owner) {
        const clash =
          owner.keys.length === 0
            ? "which is the id of the workflow's own instructions; rename the subtask"
            : `which subtask ${owner.keys.map((k) => `'${k}'`).join(" > ")} (line ${yaml.locate(owner.yamlPath, "key").line}) ` +
              "has too (ids join subtask names with '.'); rename one of them";
        issues.add(yamlPath, `becomes task id '${id}', ${clash}`, "key");
      } else idOwners.set(id, { keys, yamlPath });
      const previous = steps[steps.length - 1];
      const step: CyberianStep = {
        path: keys,
        instructions: node.instructions || null,
        systemInstructions: system,
        loopUntil: node.loop_until
          ? {
              status: node.loop_until.status,
              message: node.loop_until.message,
              ...(node.loop_until.max_iterations ? { maxIterations: node.loop_until.max_iterations } : {}),
            }
          : null,
        successCriteria: criteria
          ? {
              python: criteria.python ?? null,
              script: criteria.script ?? null,
              maxRetries: Math.max(0, criteria.max_retries ?? 0),
              retryMessage: criteria.retry_message ?? null,
            }
          : null,
        providerCall: node.provider_call
          ? {
              provider: node.provider_call.provider,
              method: node.provider_call.method,
              params: node.provider_call.params ?? {},
              outputFile: node.provider_call.output_file ?? null,
            }
          : null,
        preconditions: pendingPatterns.length > 0 ? { filesExist: pendingPatterns } : null,
      };
      pendingPatterns = [];
      steps.push({
        yamlPath,
        task: {
          id,
          role: "generic",
          description: node.description?.trim() || `Step '${id}' of the workflow`,
          dependencies: previous ? [previous.task.id] : [],
          taggedPaths: [],
          completionGate: null,
          maxGateAttempts: 5,
          maxCostMicros: null,
          maxAttemptCostMicros: null,
          maxResolutionAttempts: null,
          primaryAgent: {
            framework: "claude_code",
            model: null,
            adrVerbosity: "none",
            isolation: { ...DEFAULT_ISOLATION },
          },
          review: null,
          workstreamId: "default",
          inputsFrom: [],
          network: DEFAULT_NETWORK,
          cyberian: step,
        },
      });
    }

    const rawSubtasks = raw.subtasks as Record<string, unknown> | undefined;
    if (!rawSubtasks || !node.subtasks) return;
    for (const key of yaml.keyOrder([...yamlPath, "subtasks"])) {
      // cyberian's subtask names are text; PyYAML reads `1:` as a number, which cyberian refuses.
      if (!yaml.keyIsText([...yamlPath, "subtasks", key]))
        issues.add(
          [...yamlPath, "subtasks", key],
          `subtask name ${key} is not text: quote it ('${key}':)`,
          "key",
        );
      const child = node.subtasks[key];
      if (!child) continue;
      visit(
        child,
        rawSubtasks[key] as Record<string, unknown>,
        [...keys, key],
        [...yamlPath, "subtasks", key],
        system,
      );
    }
  };
  visit(root, yaml.value as Record<string, unknown>, [], [], null);

  const lifecycle = (root.agent_lifecycle ?? "reuse").trim().toLowerCase();
  if (lifecycle !== "reuse" && lifecycle !== "refresh") {
    issues.add(
      ["agent_lifecycle"],
      `invalid agent_lifecycle '${root.agent_lifecycle}'. Allowed: reuse, refresh`,
    );
  }
  if (steps.length === 0) {
    issues.add(
      [],
      "the workflow has no task with 'instructions' or a 'provider_call', so there is nothing to run",
    );
  }

  const rawParams = (yaml.value as Record<string, unknown>).params as Record<string, unknown> | undefined;
  const params: CyberianParam[] = rawParams
    ? yaml.keyOrder(["params"]).map((name) => {
        const p = root.params![name]!;
        return {
          name,
          range: p.range,
          required: p.required ?? false,
          examples: p.examples ?? [],
          at: yaml.locate(["params", name], "key"),
        };
      })
    : [];

  const graph: Graph = {
    name: root.name?.trim() || nameFromFile(yaml.file),
    dialect: "cyberian",
    file: yaml.file,
    settings: { ...DEFAULT_SETTINGS },
    maxWorkstreamDepth: 1,
    workstreams: [defaultWorkstream()],
    tasks: steps.map((s) => s.task),
    cyberian: {
      description: root.description ?? null,
      params,
      agentLifecycle: lifecycle === "refresh" ? "refresh" : "reuse",
      syncTargets: root.preconditions?.sync_targets?.paths ?? [],
    },
  };

  const where: Where = {
    graphName: root.name ? ["name"] : [],
    task: (i, ...field) => [...steps[i]!.yamlPath, ...field],
    workstream: () => [],
    inputRef: (i) => steps[i]!.yamlPath,
  };
  if (issues.issues.length === 0) validateStructure(graph, where, issues, false);
  if (issues.issues.length > 0) throw new GraphError(issues.issues);
  return graph;
}

function nameFromFile(file: string): string {
  const base = file.split(/[\\/]/).pop() ?? "workflow";
  return base.replace(/\.ya?ml$/i, "");
}
