/**
 * The package as a user gets it: the README's "In your own repository" lines run as written in a new
 * project (this repository the clone they pack; Claude Code on the PATH, its model scripted).
 */
import { execFileSync, spawnSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { describe, expect, it } from "vitest";
import { CLAUDE_BIN } from "../harness/claude.ts";
import { REPO_ROOT } from "./support/fixtures.ts";
import { tempRepo } from "./support/git.ts";

/** The shell lines of the README block under "In your own repository", comments dropped. */
function readmeLines(): string[] {
  const readme = readFileSync(join(REPO_ROOT, "README.md"), "utf8");
  const section = readme.slice(readme.indexOf("### In your own repository"));
  const block = /```sh\n([\s\S]*?)```/.exec(section)![1]!;
  return block
    .split("\n")
    .map((line) => line.replace(/\s+#.*$/, "").trim())
    .filter(Boolean);
}

describe("the packed package in a new repository", () => {
  it("follows the README: npm init, install, init, validate, run, merge, run again", async () => {
    const project = await tempRepo("agentrelay-user-");
    const env = {
      ...process.env,
      PATH: `${dirname(CLAUDE_BIN)}:${process.env.PATH}`,
      AGENTRELAY_CLAUDE: "",
      INIT_CWD: "",
      GIT_MERGE_AUTOEDIT: "no",
      npm_config_audit: "false",
      npm_config_fund: "false",
      npm_config_prefer_offline: "true",
    };
    const lines = readmeLines();
    expect(lines).toHaveLength(7);
    const results = lines.map((line) => {
      // This repository is the clone the README packs.
      const command = line.replaceAll("~/agentrelay", REPO_ROOT);
      const run = spawnSync("bash", ["-c", command], { cwd: project, env, encoding: "utf8" });
      return { line, code: run.status, out: run.stdout + run.stderr };
    });
    const [npmInit, install, init, validate, first, merge, second] = results;
    expect(npmInit!.code, npmInit!.out).toBe(0);
    expect(install!.code, install!.out).toBe(0);
    // No package of the install states a Node newer than this one, but for the upstream mistake
    // test/engines.test.ts names.
    const unsupported = [...install!.out.matchAll(/EBADENGINE +package: '(.+?)@/g)].map((m) => m[1]);
    expect(unsupported.filter((name) => name !== "content-type")).toEqual([]);
    expect(init!.code, init!.out).toBe(0);
    expect(init!.out).toContain(`wrote ${join(project, ".workflow/hello.yaml")}`);
    expect(validate!.out).toContain(".workflow/hello.yaml: ok (agentrelay, 1 task)");
    expect(first!.code).toBe(3);
    expect(first!.out).toContain(
      "Run hello/1: waiting for you: merge agentrelay/hello/hello/integration into main (git merge), then run again",
    );
    expect(merge!.code, merge!.out).toBe(0);
    expect(second!.out).toContain("Run hello/1: succeeded");
    expect(second!.code).toBe(0);
    expect(
      execFileSync("git", ["show", "main:docs/agentrelay-hello.md"], { cwd: project, encoding: "utf8" }),
    ).toContain("written for task hello_note");
    // The package carries no tests, fixtures or sources it does not run.
    const tarball = join(
      project,
      readdirSync(project).find((f) => /^agentrelay-.*\.tgz$/.test(f))!,
    );
    const files = execFileSync("tar", ["-tzf", tarball], { encoding: "utf8" }).split("\n");
    expect(files.some((f) => f.startsWith("package/test/") || f.startsWith("package/src/"))).toBe(false);
  }, 180_000);
});
