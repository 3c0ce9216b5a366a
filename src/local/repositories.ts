/**
 * A local run of a graph that spans repositories: each repository the graph names maps to a clone
 * (`--repo NAME=PATH`, or a line `NAME: PATH` of a `--repos FILE`), checked before anything is
 * written. The graph's own repository is `--repo DIR`, where the run's state, lock and work
 * directories stay.
 */
import { existsSync, readFileSync, statSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { GraphError, type GraphIssue } from "../graph/errors.ts";
import type { Graph } from "../graph/model.ts";
import { loadYaml } from "../graph/yaml.ts";
import { checkRepository, LocalRunError } from "./repository.ts";

/** A repository's name, as `repositories:` keys and `--repo NAME=PATH` write it. */
export const REPOSITORY_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/;

/** One clone: its path, and how a message names where it was given. */
interface Clone {
  path: string;
  /** `--repo web=PATH`, or `repos.yaml:3:6: web` for a line of a `--repos FILE`. */
  origin: string;
  /** What to point at another clone: `--repo web`, or `web in repos.yaml`. */
  pointer: string;
}

const FORM = "each line `NAME: PATH`, a repository the graph names and its clone";

/**
 * The clones a `--repos FILE` gives, a YAML mapping of repository names to paths (relative to the
 * file's folder, since the file is written beside the clones it names, and `~/` for the home
 * folder). Bad input is a GraphError, one line per problem naming the file, line and field.
 */
export function readRepositoriesFile(file: string): Record<string, Clone> {
  if (!existsSync(file) || !statSync(file).isFile())
    throw new LocalRunError(`--repos ${file}: no such file; give a YAML file with ${FORM}`);
  const yaml = loadYaml(file, readFileSync(file, "utf8"));
  const root = yaml.value;
  if (root === null || typeof root !== "object" || Array.isArray(root))
    throw new GraphError([yaml.issue([], "", `the repositories file must be a mapping: ${FORM}`)]);
  const issues: GraphIssue[] = [];
  const clones: Record<string, Clone> = {};
  for (const name of yaml.keyOrder([])) {
    const path = (root as Record<string, unknown>)[name];
    if (!REPOSITORY_NAME.test(name) || !yaml.keyIsText([name]))
      issues.push(yaml.issue([name], name, "a repository name is letters, digits, '.', '_' and '-'", "key"));
    else if (typeof path !== "string" || path.trim() === "")
      issues.push(yaml.issue([name], name, "give the path of this repository's clone, as text"));
    else {
      const { line, column } = yaml.locate([name]);
      const expanded = path === "~" || path.startsWith("~/") ? join(homedir(), path.slice(1)) : path;
      clones[name] = {
        path: resolve(dirname(file), expanded),
        origin: `${file}:${line}:${column}: ${name}`,
        pointer: `${name} in ${file}`,
      };
    }
  }
  if (issues.length > 0) throw new GraphError(issues);
  return clones;
}

/**
 * The clones given on the command line and in the file, each repository once: a name given in both
 * is refused, since which clone the run lands in must not depend on which one wins.
 */
function allClones(given: Readonly<Record<string, string>>, file: string | undefined): Record<string, Clone> {
  const clones = file ? readRepositoriesFile(file) : {};
  for (const [name, path] of Object.entries(given)) {
    if (clones[name])
      throw new LocalRunError(
        `--repo ${name}=${path}: ${clones[name].origin} gives '${name}' too; give each repository one clone`,
      );
    clones[name] = { path, origin: `--repo ${name}=${path}`, pointer: `--repo ${name}` };
  }
  return clones;
}

/**
 * The clones of the repositories the graph names, resolved and checked (a git repository with the
 * branches its workstreams start from and land on). Each problem is one line with its fix.
 */
export async function checkRepositories(
  graph: Graph,
  elsewhere: Readonly<Record<string, string>>,
  file?: string,
): Promise<Record<string, string>> {
  const declared = graph.repositories ?? [];
  const given = allClones(elsewhere, file);
  for (const name of Object.keys(given))
    if (!declared.some((r) => r.name === name))
      throw new LocalRunError(
        `${given[name]!.origin}: graph '${graph.name}' names no repository '${name}'${declared.length ? ` (it names ${declared.map((r) => r.name).join(", ")})` : ""}; drop it or declare it under repositories`,
      );
  const clones: Record<string, string> = {};
  for (const { name, fullName } of declared) {
    const clone = given[name];
    if (clone === undefined)
      throw new LocalRunError(
        `graph '${graph.name}' has workstreams in ${fullName} ('${name}'): give its clone with --repo ${name}=PATH${file ? ` or a line '${name}: PATH' in ${file}` : ""}`,
      );
    clones[name] = resolve(clone.path);
    await checkRepository(
      clones[name],
      graph,
      graph.workstreams.filter((w) => w.repository === name),
      clone.origin.startsWith("--repo ") ? `--repo ${name}=` : `${clone.origin}: `,
      clone.pointer,
    );
  }
  return clones;
}
