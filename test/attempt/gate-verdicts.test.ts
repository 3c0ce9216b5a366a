/**
 * Failures told apart before a repair is spent: a gate that fails is run again on the same tree (a
 * break fails every time, a flaky gate passes on a rerun), and a timeout is said as one, never rerun.
 * Real gates in a real repository, a counter file standing for the flake.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { git, inCheckout } from "../../src/attempt/git.ts";
import { type GateAnswer, judgeGates, RERUNS } from "../../src/attempt/gate-verdicts.ts";
import { runGate } from "../../src/attempt/gates.ts";
import { repairLanding, verifyLanding } from "../../src/attempt/repair.ts";
import { WAIT_MS } from "../../harness/patience.ts";
import { repoTemplate, tempRepo } from "../support/git.ts";

/** A gate run for real, counted. */
function counted(cwd: string, timeoutMs = WAIT_MS) {
  const runs: string[] = [];
  const gate = async (command: string): Promise<GateAnswer> => {
    runs.push(command);
    const run = await runGate(command, cwd, timeoutMs, process.env);
    if (run.passed) return null;
    return { reason: `the gate failed: ${command}`, output: run.output, timedOut: run.timedOut };
  };
  return { runs, gate };
}

/** Fails on its first `n` runs, then passes (a file outside the tree counts them). */
const failsFirst = (n: number) => {
  const file = join(mkdtempSync(join(tmpdir(), "agentrelay-flake-")), "runs");
  writeFileSync(file, "");
  return `echo x >> ${file}; test "$(wc -l < ${file})" -gt ${n}`;
};

describe("a failing gate, run again on the same tree", () => {
  const dir = mkdtempSync(join(tmpdir(), "agentrelay-gates-"));

  it("is flaky when a rerun passes: the gates pass, and the flake is named", async () => {
    const { runs, gate } = counted(dir);
    const flake = failsFirst(1);
    const judged = await judgeGates(["true", flake, "true"], gate);
    expect(judged).toMatchObject({ verdict: "flaky", reason: null, flaky: [flake] });
    expect(runs).toEqual(["true", flake, flake, "true"]);
  });

  it(`is a break when it fails ${RERUNS + 1} times: the gates after it do not run`, async () => {
    const { runs, gate } = counted(dir);
    const judged = await judgeGates(["echo broken; exit 1", "true"], gate);
    expect(judged).toMatchObject({ verdict: "break", reason: "the gate failed: echo broken; exit 1" });
    expect(judged.output).toContain("broken");
    expect(runs).toHaveLength(RERUNS + 1);
  });

  it("that timed out is a timeout: said as one, and not run again", async () => {
    const { runs, gate } = counted(dir, 300);
    const judged = await judgeGates(["sleep 5", "true"], gate);
    expect(judged).toMatchObject({ verdict: "timed_out" });
    expect(judged.output).toContain("did not finish within");
    expect(runs).toEqual(["sleep 5"]);
  });
});

/** A branch and a target that merge cleanly and are fine together: made once, a copy for each test. */
const healthyRepo = repoTemplate(async () => {
  const repo = await tempRepo();
  await git(repo, ["checkout", "-q", "-b", "branch"]);
  writeFileSync(join(repo, "a.txt"), "a\n");
  await git(repo, ["add", "."]);
  await git(repo, ["commit", "-q", "-m", "a"]);
  await git(repo, ["checkout", "-q", "main"]);
  writeFileSync(join(repo, "b.txt"), "b\n");
  await git(repo, ["add", "."]);
  await git(repo, ["commit", "-q", "-m", "b"]);
  await git(repo, ["checkout", "-q", "branch"]);
  return repo;
});

async function healthy() {
  const repo = await healthyRepo();
  return { repo, checkout: inCheckout({ workTree: repo, gitDir: join(repo, ".git") }) };
}

describe("a verification", () => {
  it("with a flaky gate lands on its pass, says so, and needs no repair", async () => {
    const { repo, checkout } = await healthy();
    const { gate } = counted(repo);
    const outcome = await verifyLanding(
      checkout,
      { target: "main", intents: "", gates: [failsFirst(1)] },
      gate,
    );
    expect(outcome).toMatchObject({ ok: true, verdict: "flaky" });
    expect(outcome.summary).toMatch(/failed, then passed on the same tree with nothing changed \(flaky/);
    expect(await git(repo, ["rev-parse", "HEAD^2"])).toBe(await git(repo, ["rev-parse", "main"]));
  });

  it("whose gate times out fails as a timeout, the branch as it was", async () => {
    const { repo, checkout } = await healthy();
    const before = await git(repo, ["rev-parse", "HEAD"]);
    const { gate } = counted(repo, 300);
    const outcome = await verifyLanding(checkout, { target: "main", intents: "", gates: ["sleep 5"] }, gate);
    expect(outcome).toMatchObject({ ok: false, verdict: "timed_out" });
    expect(await git(repo, ["rev-parse", "HEAD"])).toBe(before);
  });
});

describe("a repair", () => {
  it("whose agent changes nothing on a tree that now passes lands that tree: the failure was flaky", async () => {
    const { repo, checkout } = await healthy();
    const { gate } = counted(repo);
    const outcome = await repairLanding(
      checkout,
      { target: "main", intents: "", gates: ["true"], failure: "it failed once" },
      async () => ({ failure: null, said: "Nothing is wrong." }),
      gate,
    );
    expect(outcome).toMatchObject({ ok: true, verdict: "flaky" });
    expect(outcome.commit).toBe(await git(repo, ["rev-parse", "HEAD"]));
    expect(await git(repo, ["rev-parse", "HEAD^2"])).toBe(await git(repo, ["rev-parse", "main"]));
  });

  it("keeps a correct fix when a flaky gate fails after it once", async () => {
    const { repo, checkout } = await healthy();
    const { gate } = counted(repo);
    const outcome = await repairLanding(
      checkout,
      { target: "main", intents: "", gates: [failsFirst(1)], failure: "x" },
      // The fix edits a file the two sides differ on: an added file would first be judged alone
      // (added-alone.ts), a gate run that would take the flaky gate's one failure.
      async () => {
        writeFileSync(join(repo, "a.txt"), "fixed\n");
        return { failure: null, said: "Fixed." };
      },
      gate,
    );
    expect(outcome).toMatchObject({ ok: true, verdict: "flaky" });
    expect(await git(repo, ["show", "HEAD:a.txt"])).toBe("fixed");
  });
});
