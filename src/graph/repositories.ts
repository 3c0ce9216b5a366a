/**
 * Graphs that span repositories: the `repositories` map (short names to `OWNER/NAME`) and a
 * workstream's `repository`, checked at their keys. A workstream lives wholly in one repository (its
 * task branches, PRs, integration branch and PR), so what crosses a repository is only a dependency,
 * which waits for the other repository's workstream to land: a child workstream shares its parent's
 * repository (its integration PR targets the parent's integration branch), and `inputs_from` (files
 * read from another task's branch) stays within one.
 */
import type { PathSegment } from "./errors.ts";
import type { Graph, Repository } from "./model.ts";
import { idProblem, type IssueList, type Where } from "./validate.ts";

/**
 * GitHub's names: an owner is 1-39 letters, digits and single inner hyphens; a repository name 1-100
 * letters, digits, `.`, `_` and `-`, other than `.` and `..`.
 */
const OWNER = /^[A-Za-z0-9](?:[A-Za-z0-9]|-(?=[A-Za-z0-9])){0,38}$/;
const NAME = /^[A-Za-z0-9._-]{1,100}$/;

export function fullNameProblem(value: string): string | null {
  const [owner, name, ...rest] = value.split("/");
  if (
    rest.length === 0 &&
    owner &&
    name &&
    OWNER.test(owner) &&
    NAME.test(name) &&
    name !== "." &&
    name !== ".."
  )
    return null;
  return `'${value}' is not a GitHub repository: write OWNER/NAME, for example octo/api`;
}

/**
 * The declared repositories, each checked at its key (the name) or value (`OWNER/NAME`); `flawed`
 * holds the names already reported, so that no second message piles onto the same key.
 */
export function declaredRepositories(
  map: Record<string, string> | null | undefined,
  issues: IssueList,
  flawed: Set<string>,
): Repository[] | undefined {
  if (map == null) return undefined;
  const repositories: Repository[] = [];
  const byFullName = new Map<string, string>();
  for (const [name, fullName] of Object.entries(map)) {
    const at: PathSegment[] = ["repositories", name];
    const nameProblem = idProblem(name);
    if (nameProblem) issues.add(at, nameProblem.replace("id", "repository name"), "key");
    const problem = fullNameProblem(fullName);
    if (problem) issues.add(at, problem);
    // GitHub's names ignore case: octo/API and octo/api are one repository.
    const twin = byFullName.get(fullName.toLowerCase());
    if (!problem && twin !== undefined)
      issues.add(
        at,
        `'${name}' and '${twin}' both name ${fullName}: give each repository one name and use it in every workstream`,
      );
    if (!problem && twin === undefined) byFullName.set(fullName.toLowerCase(), name);
    if (nameProblem || problem || twin !== undefined) flawed.add(name);
    repositories.push({ name, fullName });
  }
  return repositories;
}

/** Workstreams name declared repositories, children share their parent's, and inputs stay in one. */
export function checkRepositories(
  graph: Graph,
  where: Where,
  issues: IssueList,
  flawed: ReadonlySet<string>,
): void {
  // A graph of one repository (nearly all of them) has nothing here to check: skip its tasks.
  if (!graph.repositories?.length && graph.workstreams.every((w) => w.repository == null)) return;
  const declared = new Set((graph.repositories ?? []).map((r) => r.name));
  const used = new Set<string>();
  const repositoryOf = new Map(graph.workstreams.map((w) => [w.id, w.repository ?? null]));
  const shown = (name: string | null) =>
    name === null ? "the graph's own repository" : `repository '${name}'`;
  graph.workstreams.forEach((ws, i) => {
    const name = ws.repository ?? null;
    if (name !== null) {
      used.add(name);
      if (!declared.has(name)) {
        const known = [...declared].map((n) => `'${n}'`).join(", ");
        issues.add(
          where.workstream(i, "repository"),
          `unknown repository '${name}': declare it under repositories (${name}: OWNER/NAME)${known ? `; declared: ${known}` : ""}`,
        );
      }
    }
    if (ws.parentId === null || !repositoryOf.has(ws.parentId)) return;
    const parents = repositoryOf.get(ws.parentId)!;
    if (parents !== name)
      issues.add(
        where.workstream(i, name === null ? "parent_workstream_id" : "repository"),
        `workstream '${ws.id}' is in ${shown(name)} but its parent '${ws.parentId}' is in ${shown(parents)}: a child workstream lands on its parent's integration branch, so give it the parent's repository, or make it a workstream of its own that depends on the parent's tasks`,
      );
  });
  (graph.repositories ?? []).forEach((r) => {
    if (!used.has(r.name) && !flawed.has(r.name))
      issues.add(
        ["repositories", r.name],
        `repository '${r.name}' is used by no workstream: set 'repository: ${r.name}' on one, or remove it`,
        "key",
      );
  });
  const taskRepository = new Map(graph.tasks.map((t) => [t.id, repositoryOf.get(t.workstreamId) ?? null]));
  graph.tasks.forEach((task, i) => {
    const own = taskRepository.get(task.id) ?? null;
    task.inputsFrom.forEach((ref, j) => {
      if (!taskRepository.has(ref.task)) return; // an unknown task is reported as such
      const theirs = taskRepository.get(ref.task)!;
      if (theirs !== own)
        issues.add(
          where.inputRef(i, j),
          `task '${ref.task}' is in ${shown(theirs)} and '${task.id}' in ${shown(own)}: inputs_from reads files of a task in the same repository; across repositories, depend on the task and read what landed (landed.json)`,
        );
    });
  });
}
