/**
 * Every command an attempt starts ends with its whole tree, a `setsid` or double-forked daemon
 * included, where the platform gives a PID namespace (Linux as root; CI runs so); and after a crash,
 * the next runner stops only the processes its predecessor recorded, checked by start time, the
 * resolutions' included.
 */
import { spawn, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { containPrefix, processLine, processStart, runBounded } from "../../src/attempt/bounded.ts";
import { stopRecordedProcesses } from "../../src/local/run-lock.ts";
import { until, WAIT_MS } from "../../harness/patience.ts";

const running = (marker: string) =>
  spawnSync("pgrep", ["-f", marker], { encoding: "utf8" }).stdout.trim().split("\n").filter(Boolean);

const started: number[] = [];
afterEach(() => {
  for (const pid of started.splice(0)) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // gone
    }
  }
});

describe.skipIf(containPrefix().length === 0)(
  "a command's whole tree (needs a PID namespace: Linux as root)",
  () => {
    it("ends with the command: setsid and double-forked daemons included", async () => {
      const marker = `agentrelay-daemon-${process.pid}-${Date.now()}`;
      const run = await runBounded(
        "bash",
        [
          "-c",
          `setsid sleep 3601 ${marker} </dev/null >/dev/null 2>&1 & (sh -c "sleep 3602 ${marker} &" &) ; echo started`,
        ],
        { cwd: tmpdir(), env: process.env, timeoutMs: WAIT_MS },
      );
      expect(run.output).toContain("started");
      // The daemons would outlive the test's patience: they are gone only if they were stopped.
      await until(() => running(marker).length === 0, "the command's daemons are stopped");
    });
  },
);

describe("the processes a crashed runner recorded", () => {
  it("are stopped only when they are the very processes recorded, resolutions' included", () => {
    const work = mkdtempSync(join(tmpdir(), "agentrelay-procs-"));
    const live = (name: string) => {
      const child = spawn("sh", ["-c", "sleep 300", name], { detached: true, stdio: "ignore" });
      started.push(child.pid!);
      return child.pid!;
    };
    const attempt = live("attempt");
    const resolution = live("resolution");
    const unrelated = live("unrelated");
    mkdirSync(join(work, "tasks", "a"), { recursive: true });
    mkdirSync(join(work, "resolutions", "resolve-pr@a"), { recursive: true });
    writeFileSync(join(work, "tasks", "a", "processes-1"), processLine(attempt));
    writeFileSync(join(work, "resolutions", "resolve-pr@a", "processes-1"), processLine(resolution));
    // A stale line: the pid now belongs to another process (another start time), and an old-format line.
    writeFileSync(join(work, "tasks", "a", "processes-2"), `${unrelated} 1\n${unrelated}\n`);
    expect(stopRecordedProcesses(work)).toBe(3);
    const alive = (pid: number) =>
      processStart(pid) !== null &&
      !/\) Z /.test(spawnSync("cat", [`/proc/${pid}/stat`], { encoding: "utf8" }).stdout);
    expect([alive(attempt), alive(resolution), alive(unrelated)]).toEqual([false, false, true]);
  });
});
