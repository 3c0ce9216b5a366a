/**
 * Resolutions and repairs whose target changed a workflow file, against the stand-in's git remote,
 * which refuses (as GitHub does) a push that brings a workflow change without `workflows`: a
 * resolution merges the target up to the commit before that change and pushes; a repair's fix goes on
 * the branch without the merge; GitHub's merge brings the rest. Where neither holds, a person is told
 * in one line what to do.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { BareRepoStore } from "../../harness/repo-store.ts";
import { WAIT_MS } from "../../harness/patience.ts";
import type { GateAnswer } from "../../src/attempt/gate-verdicts.ts";
import { runGate } from "../../src/attempt/gates.ts";
import { inCheckout } from "../../src/attempt/git.ts";
import { repairLanding } from "../../src/attempt/repair.ts";
import { resolveConflicts } from "../../src/attempt/resolve.ts";
import { mergedTree, targetBeforeWorkflows, withoutWorkflows } from "../../src/attempt/workflow-landing.ts";

const IDENTITY = {
  GIT_AUTHOR_NAME: "t",
  GIT_AUTHOR_EMAIL: "t@example.com",
  GIT_COMMITTER_NAME: "t",
  GIT_COMMITTER_EMAIL: "t@example.com",
};
const CI = ".github/workflows/ci.yml";
const names = { target: "main", branch: "feature" };

/**
 * A hooked remote whose main takes `mainCommits` one after another (a person's, who may change
 * workflows) while `feature` holds `feature`; a clone with feature checked out.
 */
function remote(
  base: Record<string, string>,
  feature: Record<string, string>,
  mainCommits: Record<string, string>[],
) {
  const root = mkdtempSync(join(tmpdir(), "workflow-landing-"));
  const store = BareRepoStore.create(join(root, "demo.git"));
  const start = store.commit(undefined, { [CI]: "on: push\n", ...base }, "base");
  store.branches.set("feature", store.commit(start, feature, "feature"));
  let main = start;
  mainCommits.forEach((files, i) => (main = store.commit(main, files, `main ${i}`)));
  store.branches.set("main", main);
  const clone = join(root, "clone");
  execFileSync("git", ["clone", "-q", "-b", "feature", join(root, "demo.git"), clone]);
  const git = (...args: string[]) =>
    execFileSync("git", args, { cwd: clone, env: { ...process.env, ...IDENTITY }, encoding: "utf8" }).trim();
  git("config", "user.name", "t");
  git("config", "user.email", "t@example.com");
  const push = (commit: string) => {
    try {
      git("push", "-q", "origin", `${commit}:refs/heads/feature`);
      return "pushed";
    } catch (error) {
      return String((error as { stderr?: string }).stderr);
    }
  };
  const checkout = inCheckout({ workTree: clone, gitDir: join(clone, ".git") });
  const gate = async (command: string): Promise<GateAnswer> => {
    const run = await runGate(command, clone, WAIT_MS, process.env);
    return run.passed ? null : { reason: `the gate failed: ${command}`, output: run.output };
  };
  return { clone, git, push, checkout, gate, before: git("rev-parse", "HEAD") };
}

describe("a resolution whose target changed a workflow file", () => {
  it("merges the target up to the commit before that change, pushes, and leaves the rest to GitHub's merge", async () => {
    const { clone, git, push, checkout, gate, before } = remote(
      { "a.txt": "base\n" },
      { "a.txt": "feature\n" },
      [{ "a.txt": "main\n" }, { [CI]: "on: [push, merge_group]\n" }, { "b.txt": "b\n" }],
    );
    const partial = await targetBeforeWorkflows(checkout, "origin/feature", "origin/main");
    expect(partial).toEqual({ upTo: git("rev-parse", "origin/main~2"), file: CI });
    expect(await mergedTree(checkout, "origin/feature", partial!.upTo)).toBeNull();
    const resolved = await resolveConflicts(
      checkout,
      { target: partial!.upTo, intents: "- both", gates: ["grep -q main a.txt"] },
      async () => {
        writeFileSync(join(clone, "a.txt"), "feature and main\n");
        return null;
      },
      gate,
    );
    expect(resolved).toMatchObject({ ok: true, base: partial!.upTo });
    const job = { before, commit: resolved.commit!, target: "origin/main", beforeWorkflows: partial, names };
    expect(await withoutWorkflows(checkout, job)).toBeNull();
    expect(push(resolved.commit!)).toBe("pushed");
    // GitHub's merge of the PR brings the workflow change and what followed it, cleanly.
    const landed = await mergedTree(checkout, resolved.commit!, "origin/main");
    expect(git("show", `${landed}:${CI}`)).toBe("on: [push, merge_group]");
    expect(git("show", `${landed}:b.txt`)).toBe("b");
    expect(git("show", `${landed}:a.txt`)).toBe("feature and main");
    // What it would have pushed with the whole target merged in, GitHub refuses.
    git("merge", "-q", "--no-edit", "-X", "ours", "origin/main");
    expect(push("HEAD")).toContain("without `workflows` permission");
  });

  it("whose conflict comes after that change says in one line what a person does, before any agent runs", async () => {
    const { checkout } = remote({ "a.txt": "base\n" }, { "a.txt": "feature\n" }, [
      { [CI]: "on: [push, merge_group]\n" },
      { "a.txt": "main\n" },
    ]);
    const partial = await targetBeforeWorkflows(checkout, "origin/feature", "origin/main");
    // Up to before the change is the merge base: merging that clears nothing.
    expect(await mergedTree(checkout, "origin/feature", partial!.upTo)).not.toBeNull();
  });
});

describe("a repair whose target changed a workflow file", () => {
  const math = { "math.js": "exports.add = (a, b) => a + b;\n" };
  const GATE = "node -e \"require('assert').strictEqual(require('./report').report(), 3)\"";

  it("puts its fix on the branch without the merge: the hooked remote takes it, and GitHub's merge makes the tree the gates passed on", async () => {
    const { clone, git, push, checkout, gate, before } = remote(
      math,
      { "report.js": "exports.report = () => require('./math').add(1, 2);\n" },
      [{ "math.js": "exports.sum = (a, b) => a + b;\n" }, { [CI]: "on: [push, merge_group]\n" }],
    );
    const repaired = await repairLanding(
      checkout,
      { kind: "repair", target: "origin/main", intents: "- rename; - report", gates: [GATE] },
      async () => {
        writeFileSync(join(clone, "report.js"), "exports.report = () => require('./math').sum(1, 2);\n");
        return { failure: null, said: "report uses sum." };
      },
      gate,
    );
    expect(repaired.ok).toBe(true);
    expect(push(repaired.commit!)).toContain("without `workflows` permission");
    const landing = await withoutWorkflows(checkout, {
      kind: "repair",
      before,
      commit: repaired.commit!,
      target: "origin/main",
      beforeWorkflows: null,
      names,
    });
    expect(landing).toMatchObject({ said: expect.stringContaining("GitHub's merge brings main") });
    const fixed = (landing as { commit: string }).commit;
    expect(git("rev-parse", `${fixed}^@`)).toBe(before);
    expect(push(fixed)).toBe("pushed");
    expect(await mergedTree(checkout, fixed, "origin/main")).toBe(
      git("rev-parse", `${repaired.commit}^{tree}`),
    );
  });

  it("whose fix is in a file only the target has goes to a person, in one line", async () => {
    const { clone, checkout, gate, before } = remote(
      math,
      { "math.js": "exports.sum = (a, b) => a + b;\n" },
      [
        { "report.js": "exports.report = () => require('./math').add(1, 2);\n" },
        { [CI]: "on: [push, merge_group]\n" },
      ],
    );
    const repaired = await repairLanding(
      checkout,
      { kind: "repair", target: "origin/main", intents: "- rename; - report", gates: [GATE] },
      async () => {
        writeFileSync(join(clone, "report.js"), "exports.report = () => require('./math').sum(1, 2);\n");
        return { failure: null, said: "report uses sum." };
      },
      gate,
    );
    expect(repaired.ok).toBe(true);
    const job = {
      kind: "repair" as const,
      before,
      commit: repaired.commit!,
      target: "origin/main",
      beforeWorkflows: null,
      names,
    };
    expect(await withoutWorkflows(checkout, job)).toEqual({
      reason: `main changed ${CI}, and GitHub refuses a push that brings a workflow change from agentrelay's tokens (they never hold \`workflows\`): merge main into feature yourself and push (the run goes on by itself)`,
    });
  });

  it("a verification pushes nothing, as before", async () => {
    const { git, checkout, before } = remote(math, { "a.txt": "a\n" }, [
      { [CI]: "on: [push, merge_group]\n" },
    ]);
    git("merge", "-q", "--no-edit", "origin/main");
    const job = {
      kind: "verify" as const,
      before,
      commit: git("rev-parse", "HEAD"),
      target: "origin/main",
      beforeWorkflows: null,
      names,
    };
    expect(await withoutWorkflows(checkout, job)).toMatchObject({ commit: before });
  });
});
