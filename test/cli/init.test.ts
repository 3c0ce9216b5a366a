/**
 * `agentrelay init` writes what works for the user: into their repository, a small sample graph, and
 * a workflow whose Action and image are exactly what the release workflow publishes.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { load } from "js-yaml";
import { describe, expect, it } from "vitest";
import { githubRepository, publication } from "../../src/cli/commands/init.ts";
import { REPO_ROOT } from "../support/fixtures.ts";
import { tempRepo } from "../support/git.ts";

const BIN = join(REPO_ROOT, "bin/agentrelay.js");
const version = JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8")).version as string;

function init(cwd: string, ...args: string[]) {
  const result = spawnSync(process.execPath, [BIN, "init", ...args], {
    cwd,
    encoding: "utf8",
    env: { ...process.env, INIT_CWD: "" },
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

interface Step {
  id?: string;
  uses?: string;
  run?: string;
  with?: Record<string, string>;
}

/**
 * What the release workflow publishes for `owner/repo` at this package's version: its version step
 * run for real (bash, as on a runner), its outputs put into the tags it pushes.
 */
function released(repository: string): { actionRef: string; images: string[] } {
  const workflow = load(readFileSync(join(REPO_ROOT, ".github/workflows/release.yml"), "utf8")) as {
    jobs: { release: { steps: Step[] } };
  };
  const steps = workflow.jobs.release.steps;
  const output = join(mkdtempSync(join(tmpdir(), "agentrelay-release-")), "output");
  execFileSync("bash", ["-e", "-c", steps.find((s) => s.id === "version")!.run!], {
    cwd: REPO_ROOT,
    env: {
      PATH: process.env.PATH,
      GITHUB_REF_NAME: `v${version}`,
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
  return {
    actionRef: `${repository}@${outputs.major}`,
    images: expand(push.with!.tags!).trim().split("\n"),
  };
}

function written(repo: string) {
  const workflow = load(readFileSync(join(repo, ".github/workflows/agentrelay-task.yml"), "utf8")) as {
    jobs: { task: { container: { image: string }; steps: Step[] } };
  };
  return {
    image: workflow.jobs.task.container.image,
    uses: workflow.jobs.task.steps.map((s) => s.uses).filter(Boolean) as string[],
  };
}

describe("agentrelay init", () => {
  it("writes into the repository it is run in, from any folder of it, and a small sample graph", async () => {
    const repo = await tempRepo();
    mkdirSync(join(repo, "deep", "folder"), { recursive: true });
    const result = init(join(repo, "deep", "folder"));
    expect(result.code).toBe(0);
    expect(existsSync(join(repo, ".github/workflows/agentrelay-task.yml"))).toBe(true);
    const sample = readFileSync(join(repo, ".workflow/hello.yaml"), "utf8");
    expect(sample).toMatch(/^# A small first graph/);
    const check = spawnSync(process.execPath, [BIN, "plan", join(repo, ".workflow/hello.yaml"), "--json"], {
      encoding: "utf8",
    });
    expect(JSON.parse(check.stdout).order).toEqual(["hello_note"]);
    expect(result.stdout).toContain("try the sample locally for free");
    const again = init(repo);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain("exists; leaving it (use --force to replace it)");
  });

  it("refuses outside a git repository, and in agentrelay's own directory, in one line", () => {
    const plain = mkdtempSync(join(tmpdir(), "agentrelay-plain-"));
    const outside = init(plain);
    expect(outside.code).toBe(2);
    expect(outside.stderr.trim().split("\n")).toHaveLength(1);
    expect(outside.stderr).toContain(
      "is not in a git repository: run init inside your repository, or pass --repo DIR",
    );
    const own = init(REPO_ROOT);
    expect(own.code).toBe(2);
    expect(own.stderr).toContain("this is agentrelay's own repository");
  });

  it("names exactly the Action and the image the release workflow publishes", async () => {
    const repo = await tempRepo();
    expect(init(repo).code).toBe(0);
    const { image, uses } = written(repo);
    const release = released("agentrelay/agentrelay");
    expect(uses[0]).toBe(release.actionRef);
    expect(release.images).toContain(image);
    // Every other action is pinned to a full commit.
    for (const ref of uses.slice(1)) expect(ref).toMatch(/^[\w.-]+\/[\w.-]+@[0-9a-f]{40}$/);
  });

  it("names a fork's own publication when the tool runs from a clone of the fork", async () => {
    const clone = await tempRepo("agentrelay-fork-");
    execFileSync("git", ["-C", clone, "remote", "add", "origin", "git@github.com:Alice-Dev/agentrelay.git"]);
    const mine = publication(clone);
    const release = released("Alice-Dev/agentrelay");
    expect(mine.action).toBe(release.actionRef);
    expect(release.images).toContain(mine.image);
    expect(mine.image).toMatch(/^ghcr\.io\/alice-dev\/agentrelay-agent:claude-code-/);
    expect(githubRepository("https://github.com/o/r.git")).toBe("o/r");
  });

  it("takes --action and --image for a publication of one's own", async () => {
    const repo = await tempRepo();
    const result = init(repo, "--action", "acme/agentrelay@v3", "--image", "registry.acme.dev/agent:7");
    expect(result.code).toBe(0);
    expect(written(repo)).toMatchObject({ image: "registry.acme.dev/agent:7" });
    expect(written(repo).uses[0]).toBe("acme/agentrelay@v3");
  });

  it("--no-app writes the orchestrator workflow beside the task workflow, and says plainly what GITHUB_TOKEN cannot do", async () => {
    const repo = await tempRepo();
    const result = init(repo, "--no-app", "--action", "acme/agentrelay@v3");
    expect(result.code).toBe(0);
    const read = (name: string) => readFileSync(join(repo, ".github/workflows", name), "utf8");
    const orchestrator = load(read("agentrelay.yml")) as { jobs: { orchestrate: { steps: Step[] } } };
    expect(orchestrator.jobs.orchestrate.steps.map((s) => s.uses)).toContain(
      "acme/agentrelay/orchestrate@v3",
    );
    const task = load(read("agentrelay-task.yml")) as { jobs: Record<string, { steps: Step[] }> };
    for (const job of Object.values(task.jobs)) expect(job.steps[0]!.uses).toBe("acme/agentrelay@v3");
    expect(read("agentrelay-task.yml")).not.toContain("AGENTRELAY_APP_URL");
    expect(result.stdout).toContain("PRs it opens start no workflow");
    expect(result.stdout).toContain("AGENTRELAY_APP_CLIENT_ID");
    // Choosing is one line: the app's instructions name the other way.
    expect(init(await tempRepo()).stdout).toContain("agentrelay init --no-app");
  });
});
