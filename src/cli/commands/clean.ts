/**
 * `agentrelay clean FILE --repo DIR`: removes what a finished local run left (worktrees, work
 * directories, the graph's branches; work no other branch holds kept under an archive ref, and said).
 * A run still active or resumable is refused in one line and nothing changes.
 */
import { mkdirSync } from "node:fs";
import { resolve } from "node:path";
import { loadGraphFile } from "../../graph/load.ts";
import { cleanedLines, CleanRefused, cleanRun, clearWorkDirs, notCleanable } from "../../local/clean.ts";
import { GitRefStateStore } from "../../local/git-store.ts";
import { checkRepositories } from "../../local/repositories.ts";
import { checkRepository, LocalRunError } from "../../local/repository.ts";
import { liveRunner, takeRunLock } from "../../local/run-lock.ts";
import { workRootOf } from "../../local/run.ts";
import { latestRunNumber } from "../../local/runs.ts";
import { EXIT, type Io } from "../io.ts";

export async function cleanCommand(
  file: string,
  repoDir: string,
  repositories: Record<string, string>,
  io: Io,
  repositoriesFile?: string,
): Promise<number> {
  const graph = loadGraphFile(file);
  const repo = resolve(repoDir);
  await checkRepository(repo, graph);
  const elsewhere = await checkRepositories(graph, repositories, repositoriesFile);
  const latest = await latestRunNumber(repo, graph.name);
  const stored =
    latest === null ? null : await new GitRefStateStore(repo, graph).load(`${graph.name}/${latest}`);
  if (!stored)
    throw new LocalRunError(`graph '${graph.name}' has not run in ${repo}: there is nothing to clean`);
  const workRoot = workRootOf(repo, graph.name);
  const refused = notCleanable(stored.state, liveRunner(workRoot));
  if (refused) throw new CleanRefused(`${refused}; nothing was removed`);
  // Held while cleaning: a run started meanwhile is refused rather than losing its worktrees.
  mkdirSync(workRoot, { recursive: true });
  const lock = takeRunLock(workRoot, `graph '${graph.name}' in ${repo}`);
  try {
    for (const clone of [...Object.values(elsewhere), repo])
      for (const line of cleanedLines(
        stored.state.runKey,
        await cleanRun(clone, graph.name, workRoot, latest!),
      ))
        io.out(clone === repo ? line : `${clone}: ${line}`);
    clearWorkDirs(workRoot);
  } finally {
    lock.release();
  }
  return EXIT.ok;
}
