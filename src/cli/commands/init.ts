import { copyFileSync, existsSync, mkdirSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { templatesDir } from "../../protocol/templates.ts";
import type { Io } from "../io.ts";

/** `agentrelay init [--repo DIR] [--force]`: installs the task workflow and a sample graph. */
export function initCommand(repo: string, force: boolean, io: Io): number {
  const root = resolve(repo);
  const files: [string, string][] = [
    [
      join(templatesDir(), "workflows", "agentrelay-task.yml"),
      join(root, ".github", "workflows", "agentrelay-task.yml"),
    ],
    [join(templatesDir(), "..", "examples", "demo.yaml"), join(root, ".workflow", "example.yaml")],
  ];
  let refused = false;
  for (const [from, to] of files) {
    if (existsSync(to) && !force) {
      io.err(`${to} exists; leaving it (use --force to replace it)`);
      refused = true;
      continue;
    }
    mkdirSync(dirname(to), { recursive: true });
    copyFileSync(from, to);
    io.out(`wrote ${to}`);
  }
  io.out(
    [
      "",
      "Next: commit these files, install the agentrelay app on the repository, set the repository",
      "variable AGENTRELAY_APP_URL to the app's address, and add a secret ANTHROPIC_API_KEY (or",
      "CLAUDE_CODE_OAUTH_TOKEN). A graph pushed to the default branch under .workflow/ starts a run.",
    ].join("\n"),
  );
  return refused ? 1 : 0;
}
