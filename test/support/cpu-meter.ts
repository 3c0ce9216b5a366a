/**
 * With AGENTRELAY_CPU_METER=FILE (vitest.config.ts), each test file's CPU time is appended to FILE as
 * a line `CPU-SECONDS<TAB>WALL-SECONDS<TAB>PATH`: the worker's own and that of the processes it
 * forked and waited for (git, the CLI, the Action, Claude Code), from its first import to its end.
 * CPU, not wall time, is what ranks the files on a machine other work is loading.
 */
import { appendFileSync, readFileSync } from "node:fs";
import { afterAll, expect } from "vitest";

/** utime + stime + cutime + cstime of this process, in seconds (proc(5); clock ticks are 1/100 s on Linux). */
const cpuSeconds = (): number => {
  const fields = readFileSync("/proc/self/stat", "utf8").split(") ")[1]!.split(" ");
  return (Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14])) / 100;
};

const cpu = cpuSeconds();
const wall = Date.now();

afterAll(() => {
  const line = `${(cpuSeconds() - cpu).toFixed(2)}\t${((Date.now() - wall) / 1000).toFixed(1)}\t${expect.getState().testPath}\n`;
  appendFileSync(process.env.AGENTRELAY_CPU_METER!, line);
});
