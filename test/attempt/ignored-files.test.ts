/**
 * A repair's edits to the files git ignores: they never land, but the gates run beside them. Real
 * repositories, a real gate (an ignored runner in node_modules/.bin), the agent played by a function.
 */
import { chmodSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { WAIT_MS } from "../../harness/patience.ts";
import type { GateAnswer } from "../../src/attempt/gate-verdicts.ts";
import { runGate } from "../../src/attempt/gates.ts";
import { git, inCheckout } from "../../src/attempt/git.ts";
import { repairLanding } from "../../src/attempt/repair.ts";
import { tempRepo } from "../support/git.ts";

const RUN = `try { require("./local-setup.js"); } catch {}
const fs = require("fs");
fs.mkdirSync(".cache", { recursive: true });
fs.writeFileSync(".cache/results.json", String(Date.now()));
require("./test/report.test.js");
`;

/** main renames add to sum; the branch (checked out) adds report.js, which calls add: broken together. */
async function brokenTogether() {
  const repo = await tempRepo();
  const put = (path: string, text: string) => {
    mkdirSync(join(repo, path, ".."), { recursive: true });
    writeFileSync(join(repo, path), text);
  };
  const commit = async (message: string) => {
    await git(repo, ["add", "--all"]);
    await git(repo, ["commit", "-q", "-m", message]);
  };
  put(".gitignore", "node_modules/\nlocal-setup.js\n.cache/\n");
  put("run.js", RUN);
  put("math.js", "exports.add = (a, b) => a + b;\n");
  put("test/report.test.js", "// no report yet\n");
  await commit("base");
  // The installed runner, ignored as dependencies are.
  put("node_modules/.bin/runner", "#!/bin/sh\nexec node run.js\n");
  chmodSync(join(repo, "node_modules/.bin/runner"), 0o755);
  await git(repo, ["checkout", "-q", "-b", "branch"]);
  put("report.js", "exports.report = () => require('./math').add(1, 2);\n");
  put("test/report.test.js", "require('assert').strictEqual(require('../report').report(), 3);\n");
  await commit("a report that adds");
  await git(repo, ["checkout", "-q", "main"]);
  put("math.js", "exports.sum = (a, b) => a + b;\n");
  await commit("rename add to sum");
  await git(repo, ["checkout", "-q", "branch"]);
  const checkout = inCheckout({ workTree: repo, gitDir: join(repo, ".git") });
  const gate = async (command: string): Promise<GateAnswer> => {
    const run = await runGate(command, repo, WAIT_MS, process.env);
    return run.passed ? null : { reason: `the gate failed: ${command}`, output: run.output };
  };
  const repair = (edit: () => void) =>
    repairLanding(
      checkout,
      { kind: "repair", target: "main", intents: "- rename; - report", gates: ["node_modules/.bin/runner"] },
      async () => {
        edit();
        return { failure: null, said: "Made the gates pass." };
      },
      gate,
    );
  return { repo, put, repair, head: () => git(repo, ["rev-parse", "HEAD"]) };
}

describe("a repair and the files git ignores", () => {
  it("that neuters an ignored runner the gate runs goes to a person, though it changed nothing that lands", async () => {
    const { put, repair, head } = await brokenTogether();
    const before = await head();
    const outcome = await repair(() => put("node_modules/.bin/runner", "#!/bin/sh\nexit 0\n"));
    expect(outcome).toMatchObject({ ok: false, verdict: "weakened", commit: null });
    expect(outcome.reason).toBe(
      "the repair changed what judges it (changed node_modules/.bin/runner, which git ignores (it would not land, but a gate may run it)): a person decides whether that holds",
    );
    expect(await head()).toBe(before);
  });

  it("that adds an ignored setup file the runner loads is judged without it", async () => {
    const { put, repair } = await brokenTogether();
    const outcome = await repair(() => put("local-setup.js", "process.exit(0);\n"));
    // Removed before the gates ran, they fail as they did: nothing that lands changed.
    expect(outcome).toMatchObject({ ok: false, reason: "the repair changed nothing", commit: null });
  });

  it("that fixes the code lands, whatever caches its own test runs rewrote", async () => {
    const { repo, put, repair } = await brokenTogether();
    put(".cache/results.json", "0");
    const outcome = await repair(() => {
      put("report.js", "exports.report = () => require('./math').sum(1, 2);\n");
      put(".cache/results.json", "1");
    });
    expect(outcome).toMatchObject({ ok: true });
    expect(await git(repo, ["show", "HEAD:report.js"])).toContain("sum(1, 2)");
  });
});
