/**
 * Structural rules shared by both dialects: ids, references, cycles, workstream hierarchy, and the
 * rules agentrelay lacks because our ids become git refs, job names and concurrency groups.
 */
import { formatPath, type GraphIssue, type PathSegment } from "./errors.ts";
import type { Graph } from "./model.ts";
import { dependencyAnswers, hierarchy } from "./reachability.ts";
import { dependencyLevels, type Topology, topology } from "./topology.ts";
import type { LoadedYaml } from "./yaml.ts";

/**
 * Ids become branch names (`agentrelay/<graph>/<task>`), so they must be far stricter than git's
 * ref rules, which accept shell metacharacters: letters, digits, `_`, `-` and single dots.
 */
const SAFE_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,79}$/;
/** Most ids: safe, and left as they are by lower-casing. One test answers both for them. */
const SAFE_LOWER_CASE_ID = /^[a-z0-9][a-z0-9_.-]{0,79}$/;

export function idProblem(id: string): string | null {
  if (!SAFE_ID.test(id)) {
    return `'${id}' is not a safe id: use 1-80 letters, digits, '_', '-' or '.', starting with a letter or digit`;
  }
  return dotProblem(id);
}

/** The rest of git's ref rules, for an id of safe characters. */
function dotProblem(id: string): string | null {
  if (id.includes("..") || id.endsWith(".") || id.endsWith(".lock")) {
    return `'${id}' is not a safe id: it may not contain '..' or end with '.' or '.lock'`;
  }
  return null;
}

/** Dependency lists up to this long are searched for repeats by a scan; longer ones use a set. */
const SCANNED_DEPENDENCIES = 16;

/** Whether `list[j]` repeats an earlier entry; `earlier` (for long lists) holds the entries before `j`. */
function repeatsEarlier(list: readonly string[], j: number, earlier: Set<string> | null): boolean {
  if (!earlier) return j > 0 && list.indexOf(list[j]!) < j;
  if (earlier.has(list[j]!)) return true;
  earlier.add(list[j]!);
  return false;
}

/** Where things live in the source file, per dialect. */
export interface Where {
  graphName: PathSegment[];
  task(index: number, ...field: PathSegment[]): PathSegment[];
  workstream(index: number, ...field: PathSegment[]): PathSegment[];
  /** The `task` field of the j-th `inputs_from` entry of a task (a single mapping or a list item). */
  inputRef(taskIndex: number, j: number): PathSegment[];
}

export class IssueList {
  readonly issues: GraphIssue[] = [];
  constructor(private readonly yaml: LoadedYaml) {}
  /** Records `message` at the node at `path`; `shownPath` is the field path printed (defaults to `path`). */
  add(
    path: readonly PathSegment[],
    message: string,
    which: "value" | "key" = "value",
    shownPath = path,
  ): void {
    this.issues.push(this.yaml.issue(path, formatPath(shownPath), message, which));
  }
}

export function validateStructure(
  graph: Graph,
  where: Where,
  issues: IssueList,
  declaredWorkstreams: boolean,
): void {
  const nameProblem = idProblem(graph.name);
  if (nameProblem) issues.add(where.graphName, nameProblem.replace("id", "graph name"));

  // Workstreams: ids, duplicates (also by case, since refs and concurrency groups ignore case).
  const wsIndex = new Map<string, number>();
  const wsFolded = new Map<string, string>();
  graph.workstreams.forEach((ws, i) => {
    const problem = idProblem(ws.id);
    if (problem) issues.add(where.workstream(i, "id"), problem);
    if (wsIndex.has(ws.id)) issues.add(where.workstream(i, "id"), `duplicate workstream id '${ws.id}'`);
    else if (wsFolded.has(ws.id.toLowerCase())) {
      issues.add(
        where.workstream(i, "id"),
        `workstream id '${ws.id}' differs from '${wsFolded.get(ws.id.toLowerCase())}' only by case`,
      );
    }
    wsIndex.set(ws.id, i);
    wsFolded.set(ws.id.toLowerCase(), ws.id);
  });

  // Tasks: ids, duplicates, collisions with workstream refs. Ids rarely have capitals, so only those
  // are indexed by their lower-case form: with `taskIndex`, that finds ids that differ only by case.
  // Each later check runs unless an earlier finding makes its question meaningless (a cycle among
  // tasks that share an id), so that independent problems are all reported in one pass.
  let duplicateTaskIds = false;
  const taskIndex = new Map<string, number>();
  const capitalised = new Map<string, string>();
  graph.tasks.forEach((task, i) => {
    const id = task.id;
    const lowerCase = SAFE_LOWER_CASE_ID.test(id);
    const folded = lowerCase ? id : id.toLowerCase();
    const problem = lowerCase ? dotProblem(id) : idProblem(id);
    if (problem) issues.add(where.task(i, "id"), problem);
    if (taskIndex.has(id)) {
      issues.add(where.task(i, "id"), `duplicate task id '${id}'`);
      duplicateTaskIds = true;
    } else {
      const twin = folded !== id && taskIndex.has(folded) ? folded : capitalised.get(folded);
      if (twin !== undefined)
        issues.add(where.task(i, "id"), `task id '${id}' differs from '${twin}' only by case`);
      taskIndex.set(id, i);
      if (folded !== id && !capitalised.has(folded)) capitalised.set(folded, id);
    }
    const clash = wsFolded.get(folded);
    if (clash !== undefined) {
      issues.add(
        where.task(i, "id"),
        `task id '${id}' collides with workstream '${clash}': branch agentrelay/${graph.name}/${id} cannot coexist with agentrelay/${graph.name}/${clash}/integration`,
      );
    }
  });

  // Dependencies.
  const topo = topology(graph, taskIndex);
  graph.tasks.forEach((task, i) => {
    const deps = task.dependencies;
    const earlier = deps.length > SCANNED_DEPENDENCIES ? new Set<string>() : null;
    for (let j = 0; j < deps.length; j++) {
      const dep = deps[j]!;
      if (repeatsEarlier(deps, j, earlier))
        issues.add(where.task(i, "dependencies", j), `duplicate dependency id '${dep}'`);
      else if (topo.deps[topo.depStart[i]! + j] === -1)
        issues.add(where.task(i, "dependencies", j), `unknown dependency id '${dep}'`);
    }
  });
  // Cycles among the known dependencies (with tasks sharing an id, "which task" has no answer).
  const levels = duplicateTaskIds ? null : dependencyLevels(graph, topo);
  if (!duplicateTaskIds && !levels) {
    const cycle = findCycle(graph)!;
    issues.add(
      where.task(taskIndex.get(cycle[0]!)!, "dependencies"),
      `contains a dependency cycle: ${cycle.join(" -> ")}`,
    );
  }

  // inputs_from must name a direct or transitive dependency. The questions are answered together, then
  // reported in file order.
  const refs: [task: number, entry: number, question: number][] = [];
  const questions: [task: number, other: number][] = [];
  graph.tasks.forEach((task, i) => {
    for (let j = 0; j < task.inputsFrom.length; j++) {
      const other = taskIndex.get(task.inputsFrom[j]!.task);
      refs.push([i, j, other === undefined ? -1 : questions.push([i, other]) - 1]);
    }
  });
  // Reachability is defined on an acyclic graph of distinct tasks; otherwise only unknown ids are told.
  const answers = levels ? dependencyAnswers(topo, levels, questions) : null;
  for (const [i, j, question] of refs) {
    const task = graph.tasks[i]!;
    const ref = task.inputsFrom[j]!.task;
    if (question === -1) issues.add(where.inputRef(i, j), `unknown task id '${ref}'`);
    else if (answers && !answers[question]) {
      issues.add(
        where.inputRef(i, j),
        `task '${ref}' is not a dependency (direct or transitive) of task '${task.id}'`,
      );
    }
  }

  // Tasks need a known workstream; generic tasks need a description.
  const used = new Set<string>();
  graph.tasks.forEach((task, i) => {
    used.add(task.workstreamId);
    if (!wsIndex.has(task.workstreamId)) {
      const hint =
        task.workstreamId === "default" && declaredWorkstreams
          ? "; with explicit workstreams there is no implicit 'default': declare it or set workstream_id"
          : "";
      issues.add(where.task(i, "workstream_id"), `unknown workstream id '${task.workstreamId}'${hint}`);
    }
    if (task.role === "generic" && !task.description?.trim()) {
      issues.add(
        where.task(i),
        `task '${task.id}' has role 'generic' and no description; the description is its whole assignment`,
      );
    }
    for (let k = 0; k < task.taggedPaths.length; k++) {
      const problem = pathProblem(task.taggedPaths[k]!.path);
      if (problem) issues.add(where.task(i), problem);
    }
  });

  // Workstream hierarchy.
  graph.workstreams.forEach((ws, i) => {
    if (declaredWorkstreams && !used.has(ws.id)) {
      issues.add(where.workstream(i), `workstream '${ws.id}' has no tasks; give it a task or remove it`);
    }
    if (ws.parentId !== null && !wsIndex.has(ws.parentId)) {
      issues.add(
        where.workstream(i, "parent_workstream_id"),
        `unknown parent_workstream_id '${ws.parentId}'`,
      );
    }
  });
  // An unknown parent was reported above; the hierarchy is checked as if it had none.
  const { depth, cycle: parentCycle } = hierarchy(
    graph.workstreams.map((w) => w.id),
    graph.workstreams.map((w) => (w.parentId === null ? -1 : (wsIndex.get(w.parentId) ?? -1))),
  );
  graph.workstreams.forEach((ws, i) => {
    if (parentCycle?.at === i) {
      issues.add(
        where.workstream(i, "parent_workstream_id"),
        `workstream hierarchy contains a cycle: ${parentCycle.ids.join(" -> ")}`,
      );
    }
    if (depth[i]! > graph.maxWorkstreamDepth) {
      issues.add(
        where.workstream(i, "parent_workstream_id"),
        `workstream '${ws.id}' exceeds maximum supported depth of ${graph.maxWorkstreamDepth} (set max_workstream_depth)`,
      );
    }
  });
  // A parent cycle is a wait cycle too: reported once. Unknown tasks and workstreams wait for nothing.
  if (parentCycle) return;
  const deadlock = workstreamWaitCycle(graph, topo);
  if (deadlock) {
    const at =
      deadlock.taskIndex >= 0
        ? where.task(deadlock.taskIndex, "dependencies", deadlock.dep)
        : where.workstream(
            graph.workstreams.findIndex((w) => w.id === deadlock.cycle[0]),
            "parent_workstream_id",
          );
    issues.add(
      at,
      `workstreams wait for each other in a cycle: ${deadlock.cycle.join(" -> ")}; a task that depends on another ` +
        "workstream waits for that whole workstream to merge, so this graph could never finish",
    );
  }
}

/**
 * A task that depends on a task in another workstream waits for that whole workstream to merge, and a
 * child workstream waits for its parent's integration PR. If those waits form a cycle the run can never
 * finish (agentrelay would wait forever), so it is an error.
 */
function workstreamWaitCycle(
  graph: Graph,
  topo: Topology,
): { cycle: string[]; taskIndex: number; dep: number } | null {
  const waits = new Map<string, Map<string, { taskIndex: number; dep: number }>>();
  const wsIds = graph.workstreams.map((w) => w.id);
  for (const ws of wsIds) waits.set(ws, new Map());
  for (let i = 0; i < graph.tasks.length; i++) {
    const own = topo.workstreamOf[i]!;
    if (own === -1) continue;
    for (let k = topo.depStart[i]!; k < topo.depStart[i + 1]!; k++) {
      if (topo.deps[k]! === -1) continue;
      const upstream = topo.workstreamOf[topo.deps[k]!]!;
      if (upstream === own || upstream === -1) continue;
      const from = waits.get(wsIds[own]!)!;
      if (!from.has(wsIds[upstream]!))
        from.set(wsIds[upstream]!, { taskIndex: i, dep: k - topo.depStart[i]! });
    }
  }
  for (const ws of graph.workstreams) {
    if (ws.parentId && waits.has(ws.parentId) && !waits.get(ws.id)!.has(ws.parentId))
      waits.get(ws.id)!.set(ws.parentId, { taskIndex: -1, dep: -1 });
  }
  const cycle = firstCycle([...wsIds].sort(), (ws) => [...waits.get(ws)!.keys()].sort());
  if (!cycle) return null;
  // Report at a dependency that closes the cycle (a task edge, not a parent link, when there is one).
  for (let k = 0; k < cycle.length - 1; k++) {
    const edge = waits.get(cycle[k]!)!.get(cycle[k + 1]!)!;
    if (edge.taskIndex >= 0) return { cycle, ...edge };
  }
  return { cycle, taskIndex: -1, dep: -1 };
}

/** Repository-relative POSIX paths only: tagged paths are rendered into prompts and manifests. */
export function pathProblem(path: string): string | null {
  if (path.includes("\0") || path.includes("\\")) return `path '${path}' may not contain NUL or backslashes`;
  if (path.startsWith("/") || /^[A-Za-z]:/.test(path))
    return `path '${path}' must be relative to the repository`;
  if (path.split("/").includes("..")) return `path '${path}' may not contain '..'`;
  return null;
}

/** Returns one dependency cycle as `[a, b, ..., a]`, or null. */
export function findCycle(graph: Graph): string[] | null {
  const deps = new Map(graph.tasks.map((t) => [t.id, t.dependencies]));
  return firstCycle([...deps.keys()].sort(), (id) => deps.get(id));
}

/**
 * The first cycle met searching depth-first from each start in turn, following `next` in the order it
 * gives, as `[a, b, ..., a]`; or null. Iterative, so that chains thousands deep cannot overflow. Nodes
 * `next` knows nothing of (undefined) are not entered.
 */
function firstCycle(
  starts: readonly string[],
  next: (node: string) => readonly string[] | undefined,
): string[] | null {
  const state = new Map<string, 1 | 2>(); // 1 = on the current path, 2 = done
  for (const start of starts) {
    if (state.has(start)) continue;
    const path = [start];
    const pending = [next(start) ?? []];
    const cursor = [0];
    state.set(start, 1);
    while (path.length > 0) {
      const top = path.length - 1;
      const node = pending[top]![cursor[top]!++];
      if (node === undefined) {
        state.set(path.pop()!, 2);
        pending.pop();
        cursor.pop();
        continue;
      }
      const seen = state.get(node);
      if (seen === 1) return [...path.slice(path.indexOf(node)), node];
      const onward = seen === undefined ? next(node) : undefined;
      if (onward) {
        state.set(node, 1);
        path.push(node);
        pending.push(onward);
        cursor.push(0);
      }
    }
  }
  return null;
}
