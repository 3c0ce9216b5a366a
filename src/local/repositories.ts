/**
 * A local run of a graph that spans repositories: each repository the graph names maps to a clone
 * (`--repo NAME=PATH`), checked before anything is written. The graph's own repository is `--repo DIR`,
 * where the run's state, lock and work directories stay.
 */
import { resolve } from "node:path";
import type { Graph } from "../graph/model.ts";
import { checkRepository, LocalRunError } from "./repository.ts";

/**
 * The clones of the repositories the graph names, resolved and checked (a git repository with the
 * branches its workstreams start from and land on). Each problem is one line with its fix.
 */
export async function checkRepositories(
  graph: Graph,
  elsewhere: Readonly<Record<string, string>>,
): Promise<Record<string, string>> {
  const declared = graph.repositories ?? [];
  for (const name of Object.keys(elsewhere))
    if (!declared.some((r) => r.name === name))
      throw new LocalRunError(
        `--repo ${name}=${elsewhere[name]}: graph '${graph.name}' names no repository '${name}'${declared.length ? ` (it names ${declared.map((r) => r.name).join(", ")})` : ""}; drop it or declare it under repositories`,
      );
  const clones: Record<string, string> = {};
  for (const { name, fullName } of declared) {
    const path = elsewhere[name];
    if (path === undefined)
      throw new LocalRunError(
        `graph '${graph.name}' has workstreams in ${fullName} ('${name}'): give its clone with --repo ${name}=PATH`,
      );
    clones[name] = resolve(path);
    await checkRepository(
      clones[name],
      graph,
      graph.workstreams.filter((w) => w.repository === name),
      `--repo ${name}=`,
    );
  }
  return clones;
}
