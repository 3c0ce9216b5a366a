/**
 * What an attempt wrote, checked before anything lands (the runner pushes the task branch, or local
 * mode offers it for merge):
 * - secrets in the lines it added, found by secretlint's recommended rules (cloud keys, GitHub, npm,
 *   Slack, SendGrid, OpenAI and Anthropic tokens, private keys, credentials in URLs, ...), never by a
 *   list of our own; what a finding shows is masked;
 * - edits to protected paths (protected-paths.ts: the workflows, the graphs, the agent configuration
 *   restored from the default branch, CODEOWNERS where GitHub reads it), unless the task's tagged_paths
 *   name them: then they are a design concern, so that auto-merge waits for a person.
 * A blocking finding fails the attempt with the finding named, and nothing is pushed.
 */
import { lintSource } from "@secretlint/core";
import { creator as recommended } from "@secretlint/secretlint-rule-preset-recommend";
import type { TaggedPath } from "../graph/model.ts";
import { type CheckoutGit, git } from "./git.ts";
import { isProtected } from "./protected-paths.ts";

export interface OutputFindings {
  /** Each one blocks the push. */
  blocking: string[];
  /** Protected paths the task may edit: they become design concerns. */
  concerns: string[];
}

/** True when a tagged path names `path`: the file itself, or a directory above it. */
function tagged(paths: readonly TaggedPath[], path: string): boolean {
  return paths.some(({ path: p }) => {
    const dir = p.replace(/\/+$/, "");
    return path === dir || path.startsWith(`${dir}/`);
  });
}

/** The lines a diff adds, per file, with their line numbers in the new file. */
export function addedLines(diff: string): Map<string, { line: number; text: string }[]> {
  const files = new Map<string, { line: number; text: string }[]>();
  let current: { line: number; text: string }[] | null = null;
  let next = 0;
  for (const row of diff.split("\n")) {
    if (row.startsWith("+++ ")) {
      const path = row.slice(4);
      current = path === "/dev/null" ? null : [];
      if (current) files.set(path.replace(/^b\//, ""), current);
    } else if (row.startsWith("@@")) {
      next = Number(/\+(\d+)/.exec(row)?.[1] ?? 0);
    } else if (current && row.startsWith("+")) {
      current.push({ line: next++, text: row.slice(1) });
    } else if (current && row.startsWith(" ")) next++;
  }
  return files;
}

const SECRETLINT = { rules: [{ id: "@secretlint/secretlint-rule-preset-recommend", rule: recommended }] };

/** Secrets among the lines added to each file: `path:line: what secretlint found` (masked). */
export async function secretsIn(diff: string): Promise<string[]> {
  const found: string[] = [];
  for (const [path, lines] of addedLines(diff)) {
    if (lines.length === 0) continue;
    const result = await lintSource({
      source: { filePath: path, content: lines.map((l) => l.text).join("\n"), contentType: "text" },
      options: { config: SECRETLINT, maskSecrets: true, noPhysicFilePath: true },
    });
    for (const message of result.messages) {
      const line = lines[message.loc.start.line - 1]?.line ?? "?";
      found.push(`a secret in ${path}:${line}: ${message.message.trim()}`);
    }
  }
  return found;
}

/** Checks the commits between `from` and `to` (the attempt's own work) in a repository or checkout. */
export async function checkOutput(
  repo: string | CheckoutGit,
  from: string,
  to: string,
  taggedPaths: readonly TaggedPath[],
): Promise<OutputFindings> {
  const inRepo = typeof repo === "string" ? (args: string[]) => git(repo, args) : repo.git;
  // No textconv: what is checked is what the commits hold, not what a configured driver makes of it.
  const diff = await inRepo([
    "diff",
    "--no-color",
    "--no-renames",
    "--no-ext-diff",
    "--no-textconv",
    "-U0",
    from,
    to,
  ]);
  const changed = (await inRepo(["diff", "--no-renames", "--name-only", "-z", from, to]))
    .split("\0")
    .filter(Boolean);
  const blocking = await secretsIn(diff);
  const concerns: string[] = [];
  for (const path of changed.filter(isProtected)) {
    if (tagged(taggedPaths, path))
      concerns.push(
        `the task edited the protected path ${path} (its tagged_paths allow it): a person should review it`,
      );
    else blocking.push(`an edit to the protected path ${path}, which the task's tagged_paths do not name`);
  }
  return { blocking, concerns };
}
