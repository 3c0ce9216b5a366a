/**
 * docs/github.md's steps, counted as test/readme-steps counts the README's: the numbered lists of
 * "Without an app" and "Install" (the app path) are every step a user takes to a finished run, and
 * the counts the page states (its Setup line, the sentences above and below the lists) and the
 * README's are the lists' lengths. The steps that run on this machine are run as written: `npm ci`
 * and `npm start` are this repository's scripts, `init` (app mode) writes exactly what its step says
 * in a fresh repository, and `doctor` names the variable and the secret the steps add when they are
 * missing; the rest (a public address, GitHub's pages) are checked for what they must say.
 */
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { findings, type RepoFacts } from "../src/github/doctor.ts";
import { REPO_ROOT } from "./support/fixtures.ts";
import { tempRepo } from "./support/git.ts";

const PAGE = readFileSync(join(REPO_ROOT, "docs/github.md"), "utf8");
const README = readFileSync(join(REPO_ROOT, "README.md"), "utf8");
const flat = (text: string) => text.replace(/\s+/g, " ");

/** The numbered steps under `heading` in `text`, each flattened to one line. */
function steps(text: string, heading: string): string[] {
  const section = text.slice(text.indexOf(heading));
  const list = section.slice(section.indexOf("\n1. ") + 1).split("\n\n")[0]!;
  return list.split(/\n(?=\d+\. )/).map((item) => flat(item.replace(/^\d+\. /, "")).trim());
}

describe("docs/github.md's steps, walked", () => {
  it("states the counts its lists have, and the README's", () => {
    const noApp = steps(PAGE, "## Without an app");
    const app = steps(PAGE, "## Install");
    expect(noApp).toHaveLength(7);
    expect(app).toHaveLength(11);
    const setup = flat(PAGE.slice(PAGE.indexOf("- **Setup**"), PAGE.indexOf("- **CI on task PRs**")));
    expect(setup).toContain("without an app, 5 steps with `init --no-app --gh`");
    expect(setup).toContain(`7 without \`--gh\``);
    expect(setup).toContain(`with the app, ${app.length} (`);
    expect(flat(PAGE)).toContain("Every step you take to a finished run, seven; with `init --no-app --gh`");
    expect(flat(PAGE)).toContain("every step you take to a finished run with the app, eleven");
    // The README's five with --gh are these seven less the two init makes through gh.
    expect(steps(README, "### On GitHub")).toHaveLength(5);
    expect(flat(README)).toContain("Without `--gh`, two steps more");
    expect(noApp[2]).toContain("ANTHROPIC_API_KEY");
    expect(noApp[3]).toContain("Allow GitHub Actions to create and approve pull requests");
    expect(flat(PAGE)).toContain("`init --no-app --gh` makes steps 3 and 4 through the GitHub CLI");
  });

  it("walks the app path: each step's command runs here or says what GitHub asks", async () => {
    const app = steps(PAGE, "## Install");
    const scripts = JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8")).scripts as Record<
      string,
      string
    >;
    expect(app[0]).toContain(
      "git clone https://github.com/agentrelay/agentrelay ~/agentrelay && cd ~/agentrelay && npm ci",
    );
    expect(app[1]).toMatch(/public URL/);
    expect(app[2]).toContain("`npm start`");
    expect(app[2]).toContain("registers a GitHub App from [`app.yml`]");
    expect(app[3]).toContain("`npm start`");
    expect(scripts.start).toBe("node lib/app.js");
    expect(app[4]).toMatch(/^\*\*Install the app\*\*/);
    expect(app[5]).toContain("`AGENTRELAY_APP_URL`");
    expect(app[6]).toContain("`ANTHROPIC_API_KEY`");
    expect(app[7]).toContain("`gh auth login --scopes workflow`");
    expect(app[10]).toContain("Merge the sample's integration PR");

    // Step 9, run as written in a fresh repository: exactly the files it names.
    expect(app[8]).toContain("`~/agentrelay/bin/agentrelay.js init`");
    const repo = await tempRepo();
    const init = spawnSync(
      process.execPath,
      [
        join(REPO_ROOT, "bin/agentrelay.js"),
        "init",
        // This checkout is no clone of GitHub's: the Action and image a clone would pin, given.
        ...["--action", "acme/agentrelay@v3", "--image", "registry.acme.dev/agent:7"],
      ],
      {
        cwd: repo,
        encoding: "utf8",
        env: { ...process.env, INIT_CWD: "", GITHUB_TOKEN: "", GH_TOKEN: "", PATH: "/usr/bin:/bin" },
      },
    );
    expect(init.status, init.stderr).toBe(0);
    const written = spawnSync("git", ["status", "--porcelain", "--untracked-files=all"], {
      cwd: repo,
      encoding: "utf8",
    }).stdout;
    expect(written.trim().split("\n").sort()).toEqual([
      "?? .github/workflows/agentrelay-task.yml",
      "?? .gitignore",
      "?? .workflow/hello.yaml",
    ]);
    for (const file of [".github/workflows/agentrelay-task.yml", ".workflow/hello.yaml", "`.gitignore`"])
      expect(app[8]).toContain(file);
    // The sample does not merge itself, which is why step 11 is a step.
    expect(readFileSync(join(repo, ".workflow/hello.yaml"), "utf8")).toMatch(/^ {4}auto_merge: false$/m);

    // Steps 6 and 7 are what doctor names when they are missing.
    const policy = {
      methods: ["merge" as const],
      linearHistory: false,
      requiredChecks: [],
      allowed: { merge: true, squash: true, rebase: true },
      directUpdate: true,
      strictChecks: false,
    };
    const facts: RepoFacts = {
      defaultBranch: "main",
      defaultPolicy: policy,
      integrationPolicy: policy,
      workflows: [
        {
          path: ".github/workflows/agentrelay-task.yml",
          name: "agentrelay task",
          on: {},
          checks: [],
          text: "",
        } as unknown as RepoFacts["workflows"][number],
      ],
      token: null,
      secrets: [],
      variables: [],
      actionsCanCreatePullRequests: null,
    };
    const said = findings(facts).join("\n");
    expect(said).toContain("no variable AGENTRELAY_APP_URL");
    expect(said).toContain("no secret ANTHROPIC_API_KEY or CLAUDE_CODE_OAUTH_TOKEN");
  });
});
