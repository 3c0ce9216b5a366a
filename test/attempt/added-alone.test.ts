/**
 * A repair whose new files, alone, decide the verdict: the rename-call scenario's merged tree (its real
 * runner, `node test.js`, over tests/), repaired by a function playing the agent.
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { describe, expect, it } from "vitest";
import { WAIT_MS } from "../../harness/patience.ts";
import type { GateAnswer } from "../../src/attempt/gate-verdicts.ts";
import { runGate } from "../../src/attempt/gates.ts";
import { git, inCheckout } from "../../src/attempt/git.ts";
import { repairLanding } from "../../src/attempt/repair.ts";
import { tempRepo } from "../support/git.ts";
import { editOf, GATE, SCENARIOS } from "../support/semantic.ts";

/** rename-call: main took the rename, the branch (checked out) adds report.js, which calls total. */
async function renameCall() {
  const scenario = SCENARIOS.find((s) => s.name === "rename-call")!;
  const repo = await tempRepo();
  const put = (path: string, text: string) => {
    mkdirSync(dirname(join(repo, path)), { recursive: true });
    writeFileSync(join(repo, path), text);
  };
  const commit = async (message: string) => {
    await git(repo, ["add", "--all"]);
    await git(repo, ["commit", "-q", "-m", message]);
  };
  const run = (command: string) => spawnSync("bash", ["-c", command], { cwd: repo });
  for (const [path, text] of Object.entries(scenario.files)) put(path, text);
  await commit("base");
  await git(repo, ["checkout", "-q", "-b", "branch"]);
  run(editOf(scenario.workstreams[1]!));
  await commit("report");
  await git(repo, ["checkout", "-q", "main"]);
  run(editOf(scenario.workstreams[0]!));
  await commit("rename");
  await git(repo, ["checkout", "-q", "branch"]);
  const checkout = inCheckout({ workTree: repo, gitDir: join(repo, ".git") });
  const gate = async (command: string): Promise<GateAnswer> => {
    const ran = await runGate(command, repo, WAIT_MS, process.env);
    return ran.passed ? null : { reason: `the gate failed: ${command}`, output: ran.output };
  };
  const repair = (edit: () => void) =>
    repairLanding(
      checkout,
      { kind: "repair", target: "main", intents: "- rename; - report", gates: [GATE] },
      async () => {
        edit();
        return { failure: null, said: "Made the gates pass." };
      },
      gate,
    );
  return { repo, put, run, repair, fix: scenario.repair! };
}

describe("a repair's new files", () => {
  it("that end the runner early, alone, send the repair to a person with its diff", async () => {
    const { put, repair } = await renameCall();
    const outcome = await repair(() => put("tests/000-setup.test.js", "process.exit(0);\n"));
    expect(outcome).toMatchObject({ ok: false, verdict: "weakened", commit: null });
    expect(outcome.reason).toBe(
      "the repair changed what judges it (the files it added (tests/000-setup.test.js) make the failing gates pass on their own, without its other changes): a person decides whether that holds",
    );
    expect(outcome.output).toContain("diff --git a/tests/000-setup.test.js");
  });

  it("that are a new module and its test, beside the fix, land with it", async () => {
    const { repo, put, run, repair, fix } = await renameCall();
    const outcome = await repair(() => {
      run(fix);
      put("lib/double.js", "exports.double = (x) => 2 * x;\n");
      put("tests/double.test.js", 'require("assert").strictEqual(require("../lib/double").double(2), 4);\n');
    });
    expect(outcome).toMatchObject({ ok: true });
    expect(await git(repo, ["ls-tree", "--name-only", "HEAD", "tests/"])).toContain("tests/double.test.js");
    expect(await git(repo, ["status", "--porcelain"])).toBe("");
  });
});
