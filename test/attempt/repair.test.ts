/**
 * A verification and a repair of an integration branch in a real repository, the agent played by a
 * function: the tree the gates run on, what is committed, and what is left when they fail.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { git, inCheckout } from "../../src/attempt/git.ts";
import { repairLanding, verifyLanding } from "../../src/attempt/repair.ts";
import { repoTemplate, tempRepo } from "../support/git.ts";

/** main renamed total to sum; the branch (checked out) added a call to total: they merge cleanly. */
/** Made once, a copy for each test. */
const brokenTogetherRepo = repoTemplate(async () => {
  const repo = await tempRepo();
  writeFileSync(join(repo, "lib.js"), "exports.total = 1;\n");
  await git(repo, ["add", "."]);
  await git(repo, ["commit", "-q", "-m", "base"]);
  await git(repo, ["checkout", "-q", "-b", "branch"]);
  writeFileSync(join(repo, "report.js"), "require('./lib').total;\n");
  await git(repo, ["add", "."]);
  await git(repo, ["commit", "-q", "-m", "a call to total"]);
  await git(repo, ["checkout", "-q", "main"]);
  writeFileSync(join(repo, "lib.js"), "exports.sum = 1;\n");
  await git(repo, ["commit", "-q", "-am", "rename total to sum"]);
  await git(repo, ["checkout", "-q", "branch"]);
  return repo;
});

async function brokenTogether(): Promise<{ repo: string; checkout: ReturnType<typeof inCheckout> }> {
  const repo = await brokenTogetherRepo();
  return { repo, checkout: inCheckout({ workTree: repo, gitDir: join(repo, ".git") }) };
}

/** The gate: every name report.js uses is exported by lib.js. */
const gate = (repo: string) => async () => {
  const lib = readFileSync(join(repo, "lib.js"), "utf8");
  const used = /\.(\w+);/.exec(readFileSync(join(repo, "report.js"), "utf8"))![1]!;
  return lib.includes(`exports.${used}`) ? null : `the gate failed: lib has no ${used}`;
};

const landing = { target: "main", intents: "- rename; - call", gates: ["check"] };

describe("verifying an integration branch", () => {
  it("runs the gates on the branch with its target merged in, and keeps the merge when they pass", async () => {
    const { repo, checkout } = await brokenTogether();
    writeFileSync(join(repo, "report.js"), "require('./lib').sum;\n");
    await git(repo, ["commit", "-q", "-am", "already uses sum"]);
    const main = await git(repo, ["rev-parse", "main"]);
    const outcome = await verifyLanding(checkout, landing, gate(repo));
    expect(outcome).toMatchObject({ ok: true, base: main, files: [] });
    expect(await git(repo, ["rev-parse", "HEAD"])).toBe(outcome.commit);
    expect(await git(repo, ["rev-parse", "HEAD^2"])).toBe(main);
  });

  it("fails with what failed and leaves the branch as it was when the two break together", async () => {
    const { repo, checkout } = await brokenTogether();
    const before = await git(repo, ["rev-parse", "HEAD"]);
    const outcome = await verifyLanding(checkout, landing, gate(repo));
    expect(outcome).toMatchObject({ ok: false, reason: "the gate failed: lib has no total", commit: null });
    expect(await git(repo, ["rev-parse", "HEAD"])).toBe(before);
  });

  it("names the files of a target that now conflicts, and merges nothing", async () => {
    const { repo, checkout } = await brokenTogether();
    writeFileSync(join(repo, "lib.js"), "exports.total = 2;\n");
    await git(repo, ["commit", "-q", "-am", "the branch changes lib.js too"]);
    const outcome = await verifyLanding(checkout, landing, gate(repo));
    expect(outcome).toMatchObject({
      ok: false,
      files: ["lib.js"],
      reason: "main conflicts with it in lib.js",
    });
    expect(await git(repo, ["status", "--porcelain"])).toBe("");
  });
});

describe("repairing an integration branch", () => {
  it("tells the agent what each side changed and what failed, and commits its fix on the merge", async () => {
    const { repo, checkout } = await brokenTogether();
    let prompt = "";
    const outcome = await repairLanding(
      checkout,
      { ...landing, failure: "TypeError: total is not a function" },
      async (text) => {
        prompt = text;
        writeFileSync(join(repo, "report.js"), "require('./lib').sum;\n");
        return { failure: null, said: "Used sum in report.js." };
      },
      gate(repo),
    );
    expect(prompt).toMatch(
      /^Repair `branch` \(checked out here\): `main` was merged into it without conflicts/,
    );
    expect(prompt).toContain("+require('./lib').total;"); // what this branch changed
    expect(prompt).toContain("+exports.sum = 1;"); // what landed on main
    expect(prompt).toContain("```text\nTypeError: total is not a function\n```");
    expect(outcome).toMatchObject({
      ok: true,
      summary: "Used sum in report.js.",
      base: await git(repo, ["rev-parse", "main"]),
    });
    expect(await git(repo, ["log", "-1", "--format=%s%n%n%b", outcome.commit!])).toBe(
      "Repair branch with main\n\nUsed sum in report.js.",
    );
    // The fix sits on the merge commit of main into the branch.
    expect(await git(repo, ["rev-parse", `${outcome.commit}^^2`])).toBe(
      await git(repo, ["rev-parse", "main"]),
    );
    expect(await git(repo, ["status", "--porcelain"])).toBe("");
  });

  it("writes the agent's last words into the commit with no working mention, reference or closing keyword (security case 76)", async () => {
    const { repo, checkout } = await brokenTogether();
    const said = "Used sum. Closes #1, fixes https://github.com/o/r/issues/2, resolves o/r#3; thanks @alice";
    const outcome = await repairLanding(
      checkout,
      { ...landing, failure: "TypeError: total is not a function" },
      async () => {
        writeFileSync(join(repo, "report.js"), "require('./lib').sum;\n");
        return { failure: null, said };
      },
      gate(repo),
    );
    const body = await git(repo, ["log", "-1", "--format=%b", outcome.commit!]);
    expect(body.replaceAll("\u200b", "")).toBe(said);
    expect(body).not.toMatch(
      /@[A-Za-z0-9]|#\d|\b(close[sd]?|fix(e[sd])?|resolve[sd]?):?\s+\S*(#|\/issues\/)/i,
    );
  });

  it.each([
    ["changes nothing", () => {}, "the repair changed nothing"],
    [
      "does not make the gates pass",
      (repo: string) => writeFileSync(join(repo, "x.txt"), "x\n"),
      "the gate failed: lib has no total",
    ],
    [
      "edits the agent configuration",
      (repo: string) => {
        writeFileSync(join(repo, "report.js"), "require('./lib').sum;\n");
        writeFileSync(join(repo, "CLAUDE.md"), "planted\n");
      },
      "the output checks blocked the push: an edit to the protected path CLAUDE.md, which the task's tagged_paths do not name",
    ],
  ])("that %s leaves the branch as it was", async (_what, fix, reason) => {
    const { repo, checkout } = await brokenTogether();
    const before = await git(repo, ["rev-parse", "HEAD"]);
    const outcome = await repairLanding(
      checkout,
      { ...landing, failure: "x" },
      async () => {
        fix(repo);
        return { failure: null, said: "" };
      },
      gate(repo),
    );
    expect(outcome).toMatchObject({ ok: false, reason, commit: null });
    expect(await git(repo, ["rev-parse", "HEAD"])).toBe(before);
    expect(await git(repo, ["status", "--porcelain"])).toBe("");
  });
});
