/**
 * `agentrelay init [--no-app] [--repo DIR] [--action REF] [--image REF] [--force]`: installs the task
 * workflow and a small sample graph in a repository (the current one, found from where the command was
 * run); with --no-app, the task workflow of workflow-only mode and the orchestrator workflows beside
 * it. Then `agentrelay doctor` checks the repository's settings, where a token and a GitHub remote
 * allow it.
 * The workflow names the Action and the agent image as the release workflow publishes them: this
 * project's by default, or a fork's when the tool runs from a clone of one.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import pkg from "../../../package.json" with { type: "json" };
import { templatesDir } from "../../protocol/templates.ts";
import { type Io, UsageError } from "../io.ts";
import { ciWorkflowNames, localWorkflowFiles, withRepositoryTriggers } from "./orchestrator-triggers.ts";

export interface InitOptions {
  /** The repository; by default the one the command was run in. */
  repo?: string | undefined;
  action?: string | undefined;
  image?: string | undefined;
  force: boolean;
  /** Workflow-only mode: the orchestrator runs as a workflow, with no app to host. */
  noApp?: boolean;
}

const git = (dir: string, args: string[]): string | null => {
  try {
    return execFileSync("git", ["-C", dir, ...args], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
    }).trim();
  } catch {
    return null;
  }
};

/** `owner/name` of a GitHub remote URL (https or ssh), or null. */
export function githubRepository(url: string): string | null {
  const m = /github\.com[/:]([A-Za-z0-9-]+)\/([A-Za-z0-9_.-]+?)(?:\.git)?\/?$/.exec(url.trim());
  return m ? `${m[1]}/${m[2]}` : null;
}

/**
 * Where the release workflow publishes for the repository this tool comes from: a clone of a fork
 * publishes under its owner, an installed package under the project's repository.
 */
export function publication(toolDir: string, version = pkg.version): { action: string; image: string } {
  // The Claude Code the image installs: the version this package pins (a test holds the two equal).
  const claudeCode = pkg.devDependencies["@anthropic-ai/claude-code"];
  const own = git(toolDir, ["remote", "get-url", "origin"]);
  const repository = (own && githubRepository(own)) ?? githubRepository(pkg.repository.url)!;
  const owner = repository.split("/")[0]!.toLowerCase();
  return {
    action: `${repository}@v${version.split(".")[0]}`,
    image: `ghcr.io/${owner}/agentrelay-agent:claude-code-${claudeCode}`,
  };
}

/** The package's own directory (the one holding templates/). */
const toolDir = () => dirname(templatesDir());

/** The repository to write into: --repo, else the git repository the command was run in. */
function targetRepository(explicit: string | undefined): string {
  if (explicit) return resolve(explicit);
  // npm runs scripts from the package's directory and keeps the caller's in INIT_CWD.
  const from = process.env.INIT_CWD ?? process.cwd();
  const root = git(from, ["rev-parse", "--show-toplevel"]);
  if (!root)
    throw new UsageError(
      `${from} is not in a git repository: run init inside your repository, or pass --repo DIR`,
    );
  if (resolve(root) === resolve(toolDir()))
    throw new UsageError(
      "this is agentrelay's own repository: run init inside your repository, or pass --repo DIR",
    );
  return root;
}

/** A workflow template with the Action (and its orchestrator) and the image this tool publishes. */
function workflowText(template: string, action: string, image: string): string {
  return readFileSync(join(templatesDir(), "workflows", template), "utf8")
    .replace(/^(\s+uses: )agentrelay\/agentrelay@\S+$/gm, `$1${action}`)
    .replace(
      /^(\s+uses: )agentrelay\/agentrelay\/orchestrate@\S+$/gm,
      `$1${action.replace("@", "/orchestrate@")}`,
    )
    .replace(/^(\s+image: )ghcr\.io\/agentrelay\/agentrelay-agent:\S+$/gm, `$1${image}`);
}

export async function initCommand(options: InitOptions, io: Io): Promise<number> {
  const root = targetRepository(options.repo);
  const published = publication(toolDir());
  const action = options.action ?? published.action;
  const image = options.image ?? published.image;
  const workflows = join(root, ".github", "workflows");
  // The orchestrator starts when the repository's CI finishes on a task PR (orchestrator-triggers.ts).
  const triggers = {
    defaultBranch: git(root, ["symbolic-ref", "--short", "HEAD"]) ?? "main",
    ci: ciWorkflowNames(localWorkflowFiles(root)),
  };
  const files: [string, string][] = options.noApp
    ? [
        [
          join(workflows, "agentrelay.yml"),
          withRepositoryTriggers(workflowText("no-app/agentrelay.yml", action, image), triggers),
        ],
        [join(workflows, "agentrelay-task.yml"), workflowText("no-app/agentrelay-task.yml", action, image)],
        [
          join(workflows, "agentrelay-schedule.yml"),
          workflowText("no-app/agentrelay-schedule.yml", action, image),
        ],
      ]
    : [[join(workflows, "agentrelay-task.yml"), workflowText("agentrelay-task.yml", action, image)]];
  files.push([
    join(root, ".workflow", "hello.yaml"),
    readFileSync(join(templatesDir(), "sample-graph.yaml"), "utf8"),
  ]);
  let refused = false;
  for (const [to, text] of files) {
    if (existsSync(to) && !options.force) {
      io.err(`${to} exists; leaving it (use --force to replace it)`);
      refused = true;
      continue;
    }
    mkdirSync(dirname(to), { recursive: true });
    writeFileSync(to, text);
    io.out(`wrote ${to}`);
  }
  const next = options.noApp
    ? [
        "Next: try the sample locally for free (npx agentrelay run .workflow/hello.yaml --repo . --scripted-model);",
        "then add a secret ANTHROPIC_API_KEY (or CLAUDE_CODE_OAUTH_TOKEN) and commit: the orchestrator is a workflow,",
        "nothing to host. A graph on the default branch under .workflow/ starts a run: the sample is one small task.",
        "",
        "Note: the orchestrator acts as the workflow's GITHUB_TOKEN, and PRs it opens start no workflow: your CI",
        "will not run on task PRs. To have it run, register a GitHub App (no server; see docs/github.md) and set",
        "the variable AGENTRELAY_APP_CLIENT_ID and the secret AGENTRELAY_APP_PRIVATE_KEY.",
      ]
    : [
        "Next: try the sample locally for free (npx agentrelay run .workflow/hello.yaml --repo . --scripted-model);",
        "then install the agentrelay app on the repository, set the repository variable AGENTRELAY_APP_URL",
        "to the app's address, add a secret ANTHROPIC_API_KEY (or CLAUDE_CODE_OAUTH_TOKEN), and commit.",
        "A graph on the default branch under .workflow/ starts a run: the sample is one small task.",
        "No server to run the app on? `agentrelay init --no-app` makes the orchestrator a workflow instead.",
      ];
  io.out(["", `The workflow${options.noApp ? "s run" : " runs"} ${action} in ${image}.`, ...next].join("\n"));
  await checkSettings(root, io);
  return refused ? 1 : 0;
}

/** `agentrelay doctor` on the repository, judging the workflow files just written, where it can run. */
async function checkSettings(root: string, io: Io): Promise<void> {
  const doctor = await import("./doctor.ts");
  const repository = doctor.remoteRepository(root);
  const later =
    "`npx agentrelay doctor` checks the repository's settings (merge methods, required checks, secrets)";
  if (!repository) return io.out(`\nNo GitHub remote here yet: once you have pushed, ${later}.`);
  const token = doctor.gitHubToken(process.env);
  if (!token) return io.out(`\nWith GITHUB_TOKEN set (or after \`gh auth login\`), ${later}.`);
  try {
    const api = process.env.GITHUB_API_URL ?? "https://api.github.com";
    const found = await doctor.diagnose(
      doctor.doctorClient(token, api),
      repository,
      localWorkflowFiles(root),
    );
    io.out(`\n${doctor.report(repository, found)}`);
  } catch (error) {
    io.out(`\n${repository}'s settings could not be read (${(error as Error).message}): ${later}.`);
  }
}
