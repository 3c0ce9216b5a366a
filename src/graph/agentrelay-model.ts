/**
 * The agentrelay dialect's model: a graph file the schema accepted -> the internal Graph, with
 * agentrelay's defaults and four-level isolation inheritance, and every structural rule reported at
 * its node. It needs no schema library: agentrelay.ts (zod) or canonical.ts decide what is accepted.
 */
import { type Micros, microsOfNumber } from "./amount.ts";
import { checkBudgets } from "./budget-rules.ts";
import { GraphError, type PathSegment } from "./errors.ts";
import {
  type AgentConfig,
  DEFAULT_ISOLATION,
  DEFAULT_SETTINGS,
  defaultWorkstream,
  DEFAULT_NETWORK,
  type Graph,
  type Isolation,
  type Network,
  type TaggedPath,
  type Task,
  NONE,
  type Workstream,
} from "./model.ts";
import type { AgentFile, GraphFile, IsolationFile, NetworkFile, TaskFile } from "./schema.ts";
import { checkRepositories, declaredRepositories } from "./repositories.ts";
import { IssueList, validateStructure, type Where } from "./validate.ts";
import type { LoadedYaml } from "./yaml.ts";

type PartialIsolation = Partial<Isolation>;

/** The fields an isolation block sets (null when there is no block). */
function isolationLayer(file: IsolationFile | null | undefined): PartialIsolation | null {
  if (!file) return null;
  const layer: PartialIsolation = {};
  if (file.sandbox != null) layer.sandbox = file.sandbox;
  if (file.token_tier != null) layer.tokenTier = file.token_tier;
  if (file.image != null) layer.image = file.image;
  if (file.runtime != null) layer.runtime = file.runtime;
  return layer;
}

/**
 * Per-field inheritance, child wins: graph -> workstream -> task -> agent. Without layers of its own a
 * task shares its workstream's resolved object (graphs are read-only once loaded): a large graph then
 * holds one isolation object per workstream, not one per agent.
 */
function resolveIsolation(inherited: Isolation, ...layers: (PartialIsolation | null)[]): Isolation {
  return layers.some((l) => l !== null) ? Object.assign({ ...inherited }, ...layers) : inherited;
}

/** The nearest `allow` wins (the block has one field; a block without it inherits). */
function resolveNetwork(inherited: Network, file: NetworkFile | null | undefined): Network {
  return file?.allow ? { allow: file.allow } : inherited;
}

function agentConfig(
  file: AgentFile | null | undefined,
  ws: Isolation,
  taskLayer: PartialIsolation | null,
  defaultModel: string | null,
): AgentConfig {
  return {
    framework: "claude_code",
    // A task's own model wins over the graph's `model` (agentrelay lets the graph clobber it).
    model: file?.model ?? defaultModel,
    adrVerbosity: file?.adr_verbosity ?? "none",
    isolation: resolveIsolation(ws, taskLayer, isolationLayer(file?.isolation)),
  };
}

function taggedPaths(task: TaskFile): TaggedPath[] {
  if (task.tagged_paths) return task.tagged_paths.map((p) => ({ path: p.path, category: p.category }));
  if (!task.paths) return NONE;
  return [
    ...(task.paths.src ?? []).map((path) => ({ path, category: "src" })),
    ...(task.paths.test ?? []).map((path) => ({ path, category: "test" })),
    ...(task.paths.spec ? [{ path: task.paths.spec, category: "spec" }] : []),
  ];
}

/** The Graph of an accepted graph file; structural problems (ids, cycles, references) fail located. */
export function agentrelayGraph(yaml: LoadedYaml, file: GraphFile): Graph {
  const issues = new IssueList(yaml);

  // `paths` and `tagged_paths` are two spellings of one thing.
  file.tasks.forEach((task, i) => {
    if (task.paths && task.tagged_paths) {
      issues.add(["tasks", i, "tagged_paths"], "'paths' and 'tagged_paths' are mutually exclusive", "key");
    }
  });

  // Amounts are counted in micro-dollars: one with more than six decimals is refused at its key.
  const money = (value: number | null | undefined, ...path: PathSegment[]): Micros | null => {
    if (value == null) return null;
    const micros = microsOfNumber(value);
    if (micros === null)
      issues.add(path, "must be a plain decimal number of US dollars with at most six decimals");
    return micros;
  };

  const graphIsolation = resolveIsolation(DEFAULT_ISOLATION, isolationLayer(file.isolation));
  const graphNetwork = resolveNetwork(DEFAULT_NETWORK, file.network);
  const declared = file.workstreams != null;
  const workstreamFiles = file.workstreams ?? [];
  const workstreamIsolation = new Map(
    workstreamFiles.map((w) => [w.id, resolveIsolation(graphIsolation, isolationLayer(w.isolation))]),
  );
  const workstreamNetwork = new Map(
    workstreamFiles.map((w) => [w.id, resolveNetwork(graphNetwork, w.network)]),
  );
  const workstreams: Workstream[] = declared
    ? workstreamFiles.map((w, i) => ({
        id: w.id,
        parentId: w.parent_workstream_id ?? null,
        baseBranch: w.base_branch ?? "main",
        mergeTargetBranch: w.merge_target_branch ?? "main",
        autoMerge: w.auto_merge ?? false,
        maxCostMicros: money(w.max_cost_usd, "workstreams", i, "max_cost_usd"),
        maxResolutionAttempts: w.max_resolution_attempts ?? null,
        integrationGate: w.integration_gate ?? null,
        verifyIntegration: w.verify_integration ?? null,
        maxRepairAttempts: w.max_repair_attempts ?? null,
        ...(w.repository != null && { repository: w.repository }),
      }))
    : [defaultWorkstream()];

  const defaultModel = file.model ?? null;
  // Tasks that configure nothing of their own share their workstream's agent config and empty lists
  // (frozen, as the model is read-only): a 10,000-task graph allocates a tenth of the objects.
  const plainAgents = new Map<Isolation, AgentConfig>();
  const plainAgent = (ws: Isolation): AgentConfig => {
    let agent = plainAgents.get(ws);
    if (!agent) plainAgents.set(ws, (agent = agentConfig(null, ws, null, defaultModel)));
    return agent;
  };
  const tasks: Task[] = file.tasks.map((t, i) => {
    const workstreamId = t.workstream_id ?? "default";
    const ws = workstreamIsolation.get(workstreamId) ?? graphIsolation;
    const taskLayer = isolationLayer(t.isolation);
    const inputs =
      t.inputs_from == null ? NONE : Array.isArray(t.inputs_from) ? t.inputs_from : [t.inputs_from];
    return {
      id: t.id,
      role: t.role ?? "generic",
      description: t.description ?? null,
      dependencies: t.dependencies ?? NONE,
      taggedPaths: taggedPaths(t),
      completionGate: t.completion_gate ?? null,
      maxGateAttempts: t.max_gate_attempts ?? 5,
      primaryAgent:
        t.primary_agent == null && taskLayer === null
          ? plainAgent(ws)
          : agentConfig(t.primary_agent, ws, taskLayer, defaultModel),
      review: t.review
        ? {
            agent: agentConfig(t.review.agent, ws, taskLayer, null),
            reviewOnAttempt: t.review.review_on_attempt ?? 1,
          }
        : null,
      workstreamId,
      inputsFrom: inputs.length ? inputs.map((r) => ({ task: r.task, category: r.category ?? null })) : NONE,
      maxCostMicros: money(t.max_cost_usd, "tasks", i, "max_cost_usd"),
      maxAttemptCostMicros: money(t.max_attempt_cost_usd, "tasks", i, "max_attempt_cost_usd"),
      maxResolutionAttempts: t.max_resolution_attempts ?? null,
      network: resolveNetwork(workstreamNetwork.get(workstreamId) ?? graphNetwork, t.network),
    };
  });

  const graph: Graph = {
    name: file.name,
    dialect: "agentrelay",
    file: yaml.file,
    settings: {
      tools: file.tools ?? DEFAULT_SETTINGS.tools,
      anthropicCredential: file.anthropic_credential ?? null,
      keepPanes: file.keep_panes ?? DEFAULT_SETTINGS.keepPanes,
      maxConcurrency: file.max_concurrency ?? DEFAULT_SETTINGS.maxConcurrency,
      maxTaskAttempts: file.max_task_attempts ?? DEFAULT_SETTINGS.maxTaskAttempts,
      teardownMode: file.teardown_mode ?? DEFAULT_SETTINGS.teardownMode,
      failFastOnWorkstreamError:
        file.fail_fast_on_workstream_error ?? DEFAULT_SETTINGS.failFastOnWorkstreamError,
      failFastOnInternalError: file.fail_fast_on_internal_error ?? DEFAULT_SETTINGS.failFastOnInternalError,
      maxCostMicros: money(file.max_cost_usd, "max_cost_usd"),
      maxAttemptCostMicros: money(file.max_attempt_cost_usd, "max_attempt_cost_usd"),
      minAttemptCostMicros: money(file.min_attempt_cost_usd, "min_attempt_cost_usd"),
      maxResolutionAttempts: file.max_resolution_attempts ?? null,
      verifyIntegration: file.verify_integration ?? null,
      maxRepairAttempts: file.max_repair_attempts ?? null,
      maxVerifications: file.max_verifications ?? null,
      integrationGate: file.integration_gate ?? null,
      testPaths: file.test_paths ?? null,
      protectTests: file.protect_tests ?? null,
      overlaps: file.overlaps === "serialize" ? "serialize" : null,
      outputReview:
        file.output_review === true
          ? { model: null }
          : file.output_review
            ? { model: file.output_review.model ?? null }
            : null,
    },
    maxWorkstreamDepth: file.max_workstream_depth ?? 1,
    workstreams,
    tasks,
  };
  const flawedRepositories = new Set<string>();
  const repositories = declaredRepositories(file.repositories, issues, flawedRepositories);
  if (repositories) graph.repositories = repositories;

  const where: Where = {
    graphName: ["name"],
    task: (i, ...field) => ["tasks", i, ...field],
    workstream: (i, ...field) => (declared ? ["workstreams", i, ...field] : ["name"]),
    inputRef: (i, j) =>
      Array.isArray(file.tasks[i]!.inputs_from)
        ? ["tasks", i, "inputs_from", j, "task"]
        : ["tasks", i, "inputs_from", "task"],
  };
  validateStructure(graph, where, issues, declared);
  checkBudgets(graph, where, issues);
  checkRepositories(graph, where, issues, flawedRepositories);
  if (issues.issues.length > 0) throw new GraphError(issues.issues);
  return graph;
}
