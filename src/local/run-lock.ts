/**
 * One live `agentrelay run` per graph and repository. The runner holds a lock file naming its pid;
 * a second runner while the first is alive is refused with a clear line, and a runner that finds the
 * lock of a dead one (killed, crashed) takes it over after stopping what the dead one left running:
 * every process group its attempts recorded (the attempt, Claude Code, gates), so that no old agent
 * goes on writing in a worktree the new run uses.
 */
import { existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { killTree, stillRunning } from "../attempt/bounded.ts";

export class RunLockedError extends Error {
  override name = "RunLockedError";
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
};

/** The files where a running attempt records its process groups (see attempt/bounded.ts). */
export const processGroupsFile = (taskDir: string, attempt: number): string =>
  join(taskDir, `processes-${attempt}`);

/**
 * Stops every process group recorded under `workRoot/tasks` and `workRoot/resolutions` (attempts and
 * resolutions alike) and forgets them; how many files it read. A line is acted on only when its
 * process is the one recorded (same pid, same start time): a pid the system gave to another process
 * since is left alone.
 */
export function stopRecordedProcesses(workRoot: string): number {
  let files = 0;
  for (const kind of ["tasks", "resolutions"]) {
    const root = join(workRoot, kind);
    if (!existsSync(root)) continue;
    for (const entry of readdirSync(root)) {
      if (!statSync(join(root, entry)).isDirectory()) continue;
      for (const name of readdirSync(join(root, entry))) {
        if (!name.startsWith("processes-")) continue;
        stopRecordedIn(join(root, entry, name));
        files++;
      }
    }
  }
  return files;
}

/**
 * Stops the process groups one attempt recorded that still run as recorded, and forgets the file. The
 * runner does this when an attempt process ends, cancelled or not: a command it started in a group of
 * its own just as it was stopped (after its children were listed) would otherwise outlive it.
 */
export function stopRecordedIn(file: string): void {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch {
    return; // none recorded
  }
  for (const line of text.split("\n")) {
    const pid = stillRunning(line);
    if (pid !== null) killTree(pid);
  }
  rmSync(file, { force: true });
}

export interface RunLock {
  /** True when the lock was taken from a runner that had died. */
  tookOver: boolean;
  release(): void;
}

export function takeRunLock(workRoot: string, what: string): RunLock {
  const file = join(workRoot, "run.lock");
  for (let tries = 0; tries < 3; tries++) {
    try {
      writeFileSync(file, `${process.pid} ${hostname()}\n`, { flag: "wx" });
      return { tookOver: tries > 0, release: () => rmSync(file, { force: true }) };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    }
    const [pid, host] = readFileSync(file, "utf8").trim().split(" ");
    if (host !== hostname()) {
      throw new RunLockedError(
        `a run on host ${host} holds ${what} (${file}); if no run is going on there, remove the file`,
      );
    }
    if (alive(Number(pid))) {
      throw new RunLockedError(
        `another \`agentrelay run\` (pid ${pid}) is running ${what}; wait for it to finish, or stop it and run again`,
      );
    }
    // The holder is gone: stop what it left running, then take its place.
    stopRecordedProcesses(workRoot);
    rmSync(file, { force: true });
  }
  throw new RunLockedError(`could not take the lock of ${what} (${file}); remove it if no run is going on`);
}

/** The pid of the live runner holding the lock on this host, or null when no runner is live. */
export function liveRunner(workRoot: string): number | null {
  const file = join(workRoot, "run.lock");
  if (!existsSync(file)) return null;
  const [pid, host] = readFileSync(file, "utf8").trim().split(" ");
  return host === hostname() && alive(Number(pid)) ? Number(pid) : null;
}
