/**
 * `agentrelay init [--no-app] [--repo DIR] [--release vX.Y.Z] [--action REF] [--image REF] [--force]`:
 * sets a repository up for one of the two ways agentrelay runs on GitHub (the app, or with --no-app
 * the orchestrator as a workflow), and leaves in it only what that needs: its workflows, a small
 * sample graph, and the .gitignore line of local runs. Run again, it brings the workflows it wrote
 * to the asked mode and source (a workflow someone edited since is left alone unless --force), and
 * says what it changed; it succeeds (exit 0) only when the repository is set up. Then `agentrelay
 * doctor` checks the repository's settings, where a token and a GitHub remote allow it.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { templatesDir } from "../../protocol/templates.ts";
import { type Io, InputError, UsageError } from "../io.ts";
import { gitHubToken, remoteRepository } from "./github-remote.ts";
import { type SourceOptions, workflowSource } from "./workflow-source.ts";
import { marked, unedited, type WorkflowSource, workflowText } from "./workflow-text.ts";
import { ciWorkflowNames, localWorkflowFiles, withRepositoryTriggers } from "./orchestrator-triggers.ts";

export interface InitOptions extends SourceOptions {
  /** The repository; by default the one the command was run in. */
  repo?: string | undefined;
  force: boolean;
  /** Workflow-only mode: the orchestrator runs as a workflow, with no app to host. */
  noApp?: boolean;
  /** With noApp: set the secret and the Actions PR setting through the GitHub CLI (init-gh.ts). */
  gh?: boolean;
}

/** The package's own directory (the one holding templates/). */
const toolDir = () => dirname(templatesDir());

/** The repository to write into: --repo, else the git repository the command was run in. */
function targetRepository(explicit: string | undefined): string {
  // npm runs scripts from the package's directory and keeps the caller's in INIT_CWD.
  const from = explicit ? resolve(explicit) : process.env.INIT_CWD || process.cwd();
  let root: string;
  try {
    root = execFileSync("git", ["-C", from, "rev-parse", "--show-toplevel"], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
    }).trim();
  } catch {
    throw new InputError(
      explicit
        ? `--repo ${explicit} is not a git repository: run \`git init\` there first, or point --repo at your repository`
        : `${from} is not in a git repository: run init inside your repository, or pass --repo DIR`,
    );
  }
  if (resolve(root) === resolve(toolDir()))
    throw new InputError(
      "this is agentrelay's own clone: run init inside your repository, or pass --repo DIR",
    );
  return root;
}

const TASK = ".github/workflows/agentrelay-task.yml";
const ORCHESTRATOR = ".github/workflows/agentrelay.yml";
/** The orchestrator's safety-net schedule, enabled only while a run is active. */
const SCHEDULE = ".github/workflows/agentrelay-schedule.yml";
const SAMPLE = ".workflow/hello.yaml";
/** What local runs leave in the repository (worktrees, work directories): never to be committed. */
const IGNORED = "/.agentrelay/";

/** Which mode's task workflow `text` is, by what only that mode's has. */
const modeOf = (text: string): "app" | "no-app" | null =>
  /^\s+app-url: /m.test(text) ? "app" : /^\s+tier: \$\{\{ inputs\.tier \}\}/m.test(text) ? "no-app" : null;

interface Change {
  /** What init did or would not do, one line, for the user. */
  line: string;
  /** Left as it was, though the asked setup needs it changed. */
  refused?: boolean;
}

/** Writes `text` at `path` (relative to `root`) unless a file there was edited since init wrote it. */
function putWorkflow(root: string, path: string, text: string, force: boolean, mode: string): Change {
  const file = join(root, path);
  const wanted = marked(text);
  if (!existsSync(file)) {
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, wanted);
    return { line: `wrote ${path}` };
  }
  const had = readFileSync(file, "utf8");
  if (had === wanted) return { line: `unchanged ${path}` };
  // Another mode's task workflow (as earlier versions of init wrote it, unmarked) is replaced too.
  const otherMode = path === TASK && modeOf(had) !== null && modeOf(had) !== mode;
  if (!force && !unedited(had) && !otherMode)
    return {
      line: `${path} was edited since init wrote it, so it was left as it is: compare it with what init writes (run init in a scratch repository) and merge by hand, or replace it with --force`,
      refused: true,
    };
  writeFileSync(file, wanted);
  return { line: `replaced ${path}${otherMode ? ` (it was the ${modeOf(had)} mode's)` : ""}` };
}

/** Removes one of workflow-only mode's orchestrator workflows, which would act beside the app. */
function removeOrchestrator(root: string, path: string, force: boolean): Change | null {
  const file = join(root, path);
  if (!existsSync(file)) return null;
  if (!force && !unedited(readFileSync(file, "utf8")))
    return {
      line: `${path} is workflow-only mode's orchestrator and would act beside the app: remove it (git rm ${path}), or run init with --force`,
      refused: true,
    };
  rmSync(file);
  return { line: `removed ${path} (workflow-only mode's orchestrator: the app does its work)` };
}

/** The sample graph, unless the repository has one (it may be the user's by now). */
function putSample(root: string): Change {
  const file = join(root, SAMPLE);
  if (existsSync(file)) return { line: `kept ${SAMPLE} (already there)` };
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, readFileSync(join(templatesDir(), "sample-graph.yaml"), "utf8"));
  return { line: `wrote ${SAMPLE}` };
}

/** `.gitignore`'s line for what local runs leave, added once. */
function ignoreLocalRuns(root: string): Change | null {
  const file = join(root, ".gitignore");
  const had = existsSync(file) ? readFileSync(file, "utf8") : "";
  if (had.split("\n").some((line) => line.trim() === IGNORED || line.trim() === ".agentrelay/")) return null;
  const lead = had === "" || had.endsWith("\n") ? "" : "\n";
  writeFileSync(file, `${had}${lead}# agentrelay's local runs: worktrees and work directories\n${IGNORED}\n`);
  return { line: `added ${IGNORED} to .gitignore (what local runs leave)` };
}

/** What to do next: try the sample here, then on GitHub the settings init cannot make. */
function nextSteps(
  source: WorkflowSource,
  noApp: boolean,
  done: { secret: boolean; setting: boolean } = { secret: false, setting: false },
): string[] {
  const built =
    "build" in source.image
      ? "; the first task job builds the agent image from that commit's Dockerfile into this repository's packages (a few minutes, once)"
      : ` in ${source.image.published}`;
  const lines = [
    "",
    `The workflow${noApp ? "s run" : " runs"} ${source.action}${source.label ? ` (${source.label})` : ""}${built}.`,
    "",
    "Next:",
    "  1. Try the sample here, free (the scripted model): agentrelay run .workflow/hello.yaml --repo . --scripted-model",
  ];
  let n = 1;
  if (noApp)
    lines.push(
      ...(done.secret
        ? []
        : [
            `  ${++n}. On GitHub, add the repository secret ANTHROPIC_API_KEY (or CLAUDE_CODE_OAUTH_TOKEN, from \`claude setup-token\`):`,
            "     Settings > Secrets and variables > Actions > New repository secret.",
          ]),
      ...(done.setting
        ? []
        : [
            `  ${++n}. Settings > Actions > General > Workflow permissions: tick "Allow GitHub Actions to create and approve`,
            '     pull requests" and save; without it GitHub refuses the pull requests the orchestrator opens.',
          ]),
      `  ${n + 1}. Commit and push to the default branch (git add .github .workflow .gitignore && git commit && git push):`,
      "     the sample starts a run (one small task, a few cents), followed on the run's tracking issue.",
      "     Pushing workflow files needs a credential that may: a token with the `workflow` scope (`gh auth refresh -s workflow`).",
      "",
      "The orchestrator is a workflow: nothing to host. It acts as the workflow's GITHUB_TOKEN, and PRs it opens",
      "start no workflow: your CI will not run on task PRs. To have it run, register a GitHub App (no server;",
      "see docs/github.md) and set the variable AGENTRELAY_APP_CLIENT_ID and the secret AGENTRELAY_APP_PRIVATE_KEY.",
    );
  else
    lines.push(
      "  2. Run the agentrelay app where GitHub reaches it (docs/github.md, Install), and install it on this repository.",
      "  3. Set the repository variable AGENTRELAY_APP_URL to the app's address, and add the secret ANTHROPIC_API_KEY",
      "     (or CLAUDE_CODE_OAUTH_TOKEN): Settings > Secrets and variables > Actions.",
      "  4. Commit and push to the default branch (git add .github .workflow .gitignore && git commit && git push):",
      "     the sample starts a run (one small task, a few cents).",
      "",
      "No server to run the app on? `agentrelay init --no-app` makes the orchestrator a workflow instead.",
    );
  return lines;
}

export async function initCommand(options: InitOptions, io: Io): Promise<number> {
  if (options.gh && !options.noApp)
    throw new UsageError("--gh sets up workflow-only mode's settings: use it with --no-app");
  const root = targetRepository(options.repo);
  const source = workflowSource(toolDir(), options);
  const mode = options.noApp ? "no-app" : "app";
  // The orchestrator starts when the repository's CI finishes on a task PR (orchestrator-triggers.ts).
  const triggers = {
    defaultBranch: defaultBranchOf(root),
    ci: ciWorkflowNames(localWorkflowFiles(root)),
  };
  const changes: (Change | null)[] = options.noApp
    ? [
        putWorkflow(
          root,
          ORCHESTRATOR,
          withRepositoryTriggers(workflowText("no-app/agentrelay.yml", source), triggers),
          options.force,
          mode,
        ),
        putWorkflow(
          root,
          SCHEDULE,
          workflowText("no-app/agentrelay-schedule.yml", source),
          options.force,
          mode,
        ),
        putWorkflow(root, TASK, workflowText("no-app/agentrelay-task.yml", source), options.force, mode),
      ]
    : [
        putWorkflow(root, TASK, workflowText("agentrelay-task.yml", source), options.force, mode),
        removeOrchestrator(root, ORCHESTRATOR, options.force),
        removeOrchestrator(root, SCHEDULE, options.force),
      ];
  changes.push(putSample(root), ignoreLocalRuns(root));
  const done = changes.filter((c): c is Change => c !== null);
  for (const change of done) if (!change.refused) io.out(change.line);
  const refused = done.filter((c) => c.refused);
  if (refused.length > 0) {
    for (const change of refused) io.err(`agentrelay: ${change.line}`);
    io.err(`agentrelay: init did not finish: ${relative(process.cwd(), root) || "."} is not set up yet`);
    return 1;
  }
  // The repository holds what the mode needs: what GitHub's settings still need is said next.
  const viaGh =
    options.gh && options.noApp
      ? (await import("./init-gh.ts")).setUpWithGh(remoteRepository(root), process.env)
      : null;
  for (const line of viaGh?.lines ?? []) io.out(line);
  io.out(nextSteps(source, options.noApp === true, viaGh ?? undefined).join("\n"));
  await checkSettings(root, io);
  return 0;
}

/** The branch checked out in `root` (the default branch, in a repository init sets up), or main. */
function defaultBranchOf(root: string): string {
  try {
    return execFileSync("git", ["-C", root, "symbolic-ref", "--short", "HEAD"], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
    }).trim();
  } catch {
    return "main";
  }
}

/** `agentrelay doctor` on the repository, judging the workflow files just written, where it can run. */
async function checkSettings(root: string, io: Io): Promise<void> {
  const doctor = await import("./doctor.ts");
  const repository = remoteRepository(root);
  const later =
    "`agentrelay doctor` checks the repository's settings (merge methods, required checks, secrets)";
  if (!repository) return io.out(`\nNo GitHub remote here yet: once you have pushed, ${later}.`);
  const token = gitHubToken(process.env);
  if (!token) return io.out(`\nWith GITHUB_TOKEN set (or after \`gh auth login\`), ${later}.`);
  try {
    const api = process.env.GITHUB_API_URL ?? "https://api.github.com";
    const found = await doctor.diagnose(
      doctor.doctorClient(token, api),
      repository,
      localWorkflowFiles(root),
      api,
    );
    io.out(`\n${doctor.report(repository, found)}`);
  } catch (error) {
    io.out(`\n${repository}'s settings could not be read (${(error as Error).message}): ${later}.`);
  }
}
