import { spawnSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { readSignals, writeSignalShims } from "../../src/attempt/signals.ts";
import { sequence, startScriptedModel } from "../../src/scripted/model-server.ts";
import { runClaude } from "../../harness/claude.ts";
import { REPO_ROOT } from "../support/fixtures.ts";

function attemptDirs() {
  const work = mkdtempSync(join(tmpdir(), "agentrelay-work-"));
  const bin = join(work, "bin");
  writeSignalShims(bin, join(REPO_ROOT, "bin/agentrelay.js"));
  const signalDir = join(work, "attempts", "1");
  const env = { ...process.env, PATH: `${bin}:${process.env.PATH}`, AGENTRELAY_SIGNAL_DIR: signalDir };
  const sh = (script: string) => spawnSync("sh", ["-c", script], { env, encoding: "utf8" });
  return { work, sh, env };
}

describe("in-job commands", () => {
  it("write agentrelay's signal files, read back by the runner", () => {
    const { work, sh } = attemptDirs();
    const script = [
      'agentrelay-concern --message "push() both evicts and raises"',
      "agentrelay-concern --message 'second\nline'",
      'agentrelay-ops-concern --message "pip install took 40s"',
      'agentrelay-summary --message "Implemented BoundedQueue; tests pass."',
      "agentrelay-declare --path src/q.py --action created --category src",
      "agentrelay-declare --path tests/test_q.py --action created --category tests",
      'agentrelay-complete --title "Add BoundedQueue"',
    ].join(" && ");
    const result = sh(script);
    expect(result.status).toBe(0);
    expect(readSignals(work, 1)).toEqual({
      done: { noPr: false },
      failed: null,
      concerns: ["push() both evicts and raises", "second line"],
      opsConcerns: ["pip install took 40s"],
      summary: "Implemented BoundedQueue; tests pass.",
      outputs: [
        { path: "src/q.py", action: "created", category: "src" },
        { path: "tests/test_q.py", action: "created", category: "tests" },
      ],
    });
  });

  it("records giving up, and finishing without changes", () => {
    const a = attemptDirs();
    expect(a.sh('agentrelay-failed --reason "the spec contradicts itself"').status).toBe(0);
    expect(readSignals(a.work, 1)).toMatchObject({ done: null, failed: "the spec contradicts itself" });
    const b = attemptDirs();
    expect(b.sh("agentrelay-complete-no-pr").status).toBe(0);
    expect(readSignals(b.work, 1).done).toEqual({ noPr: true });
  });

  it("refuses bad input with a clear message and exit 1", () => {
    const { sh } = attemptDirs();
    const bad = sh("agentrelay-declare --path ../etc/passwd --action created --category src");
    expect(bad.status).toBe(1);
    expect(bad.stderr).toContain("path '../etc/passwd' may not contain '..'");
    expect(sh("agentrelay-declare --path a.py --action renamed --category src").stderr).toContain(
      "--action must be created, modified or deleted",
    );
    expect(sh("agentrelay-concern").stderr).toContain("agentrelay-concern needs --message");
    const outside = spawnSync(
      process.execPath,
      [join(REPO_ROOT, "bin/agentrelay.js"), "signal", "agentrelay-concern", "--message", "x"],
      {
        encoding: "utf8",
        env: { ...process.env, AGENTRELAY_SIGNAL_DIR: "" },
      },
    );
    expect(outside.stderr).toContain("AGENTRELAY_SIGNAL_DIR is not set");
  });

  it("are what the real agent calls from its shell", async () => {
    const { work, env } = attemptDirs();
    const server = await startScriptedModel(
      sequence(
        [
          {
            name: "Bash",
            input: { command: 'agentrelay-concern --message "naming is ambiguous"', description: "concern" },
          },
          { name: "Bash", input: { command: "agentrelay-complete-no-pr", description: "finish" } },
        ],
        "Done.",
      ),
    );
    try {
      const run = await runClaude(
        work,
        "Record a concern, then finish.",
        server.url,
        ["--allowedTools", "Bash"],
        env,
      );
      expect(run.code).toBe(0);
    } finally {
      await server.close();
    }
    expect(readSignals(work, 1)).toMatchObject({ done: { noPr: true }, concerns: ["naming is ambiguous"] });
  });
});
