/**
 * A command run with a deadline that holds: the command gets a process group of its own, and the
 * whole group is killed at the deadline, and when the command itself has exited. A grandchild that
 * keeps the output pipe open (`sleep 20 & exit 0`) can neither outlive its command nor keep the caller
 * waiting. Gates, success criteria, providers and Claude Code itself run this way.
 */
import { type ChildProcess, execFileSync, spawn, spawnSync } from "node:child_process";
import { appendFileSync, readdirSync, readFileSync } from "node:fs";
import { programPath } from "./programs.ts";

/**
 * How an agent's command runs: what is put before it (its network namespace, its own user, no
 * capability: see egress/ and agent-user.ts), and what ends every process it left once it ended.
 */
export interface Confinement {
  prefix: string[];
  /** Ends every process of the agent's own user (agent-user.ts); throws when it cannot. */
  endAll?: () => Promise<void>;
  /** Gives what the runner wrote in the agent's checkout to the agent's own user. */
  give?: (path: string) => void;
}

export interface BoundedOptions {
  cwd: string;
  env: NodeJS.ProcessEnv;
  timeoutMs: number;
  /** Written to the command's stdin (then closed); stdin is empty otherwise. */
  input?: string;
  /** Each chunk of stdout, as it comes (Claude Code's stream). */
  onStdout?: (chunk: string) => void;
  /** Most characters of output kept (the tail is kept). */
  maxOutput?: number;
  /** Stops the command early (its whole tree), as at a deadline. */
  signal?: AbortSignal;
  /** An agent's command: how it is confined, and what ends what it left (see Confinement). */
  confine?: Confinement;
}

export interface BoundedResult {
  /** The command's exit code (null when a signal ended it). */
  code: number | null;
  timedOut: boolean;
  stdout: string;
  stderr: string;
  /** stdout and stderr together, in the order they came. */
  output: string;
}

let groupsFile: string | null = null;

/**
 * Records the process group of every command this process starts in `file`, one per line with its
 * start time (processLine): whoever finds this process dead (local mode, after a crash) stops the
 * groups it left behind, and only those.
 */
export function recordProcessGroups(file: string): void {
  groupsFile = file;
}

/**
 * When a process started, in clock ticks since boot (field 22 of /proc/PID/stat, read after the
 * command name, which may hold spaces): with the pid, it names one process, never a later one that
 * reused the pid. Null where there is no such process or no /proc.
 */
export function processStart(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19] ?? null;
  } catch {
    return null;
  }
}

/** A process file's line for `pid`: `PID START`. */
export const processLine = (pid: number): string => `${pid} ${processStart(pid) ?? "?"}\n`;

/** The pid a process file's line names, if that very process still runs (its start time matches). */
export function stillRunning(line: string): number | null {
  const [pidText, start] = line.trim().split(" ");
  const pid = Number(pidText);
  if (!Number.isInteger(pid) || pid <= 1 || !start || start === "?") return null;
  return processStart(pid) === start ? pid : null;
}

let containment: string[] | null = null;

/**
 * What contains a command's whole tree where the platform allows it: a PID namespace of its own
 * (`unshare --pid --fork --kill-child`, Linux, as root), whose every process the kernel kills when the
 * command ends or is stopped, a `setsid` or double-forked daemon included. Elsewhere, the process
 * group and the descendants found by their parents are stopped (killTree), which a daemon that left
 * its parent escapes.
 */
export function containPrefix(): string[] {
  if (containment) return containment;
  const prefix = [programPath("unshare"), "--pid", "--fork", "--kill-child", "--"];
  const usable =
    process.platform === "linux" &&
    process.getuid?.() === 0 &&
    spawnSync(prefix[0]!, [...prefix.slice(1), "true"], { stdio: "ignore" }).status === 0;
  containment = usable ? prefix : [];
  return containment;
}

/** How long output may still arrive after the command exited, before its group is stopped. */
const DRAIN_MS = 200;

/**
 * Every process's parent: read from /proc on Linux (no program runs for it), else from `ps` (found on
 * the runner's own PATH, so that it works wherever POSIX does).
 */
function parentLinks(): [number, number][] {
  if (process.platform === "linux") {
    const links: [number, number][] = [];
    for (const entry of readdirSync("/proc")) {
      if (!/^\d+$/.test(entry)) continue;
      try {
        const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
        links.push([Number(entry), Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1])]);
      } catch {
        // gone meanwhile
      }
    }
    return links;
  }
  try {
    return execFileSync(programPath("ps"), ["-A", "-o", "pid=,ppid="], { encoding: "utf8" })
      .split("\n")
      .map((line) => line.trim().split(/\s+/).map(Number) as [number, number]);
  } catch {
    return [];
  }
}

/** The processes below `root`, by their parent links. */
function descendants(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const [pid, ppid] of parentLinks())
    if (pid && ppid) children.set(ppid, [...(children.get(ppid) ?? []), pid]);
  const found: number[] = [];
  for (let queue = [root]; queue.length > 0;) {
    const next = children.get(queue.shift()!) ?? [];
    found.push(...next);
    queue.push(...next);
  }
  return found;
}

/**
 * Stops a process and everything below it: its group, and every descendant and its group. Claude
 * Code runs each Bash command in a session of its own, which a group signal alone does not reach.
 */
export function killTree(pid: number, signal: NodeJS.Signals = "SIGKILL"): void {
  for (const target of [pid, ...descendants(pid)]) {
    for (const id of [-target, target]) {
      try {
        process.kill(id, signal);
      } catch {
        // not a group leader, or already gone
      }
    }
  }
}

/** Stops a command and all it started. */
export function killGroup(child: ChildProcess, signal: NodeJS.Signals = "SIGKILL"): void {
  if (child.pid !== undefined) killTree(child.pid, signal);
}

export function runBounded(command: string, args: string[], options: BoundedOptions): Promise<BoundedResult> {
  const max = options.maxOutput ?? 1_000_000;
  return new Promise((resolve, reject) => {
    const prefix = options.confine?.prefix ?? [];
    const [program, ...programArgs] = [...containPrefix(), ...prefix, command, ...args] as [
      string,
      ...string[],
    ];
    const child = spawn(program, programArgs, {
      cwd: options.cwd,
      env: options.env,
      detached: true, // a process group of its own
      stdio: [options.input === undefined ? "ignore" : "pipe", "pipe", "pipe"],
    });
    if (groupsFile && child.pid !== undefined) appendFileSync(groupsFile, processLine(child.pid));
    let stdout = "";
    let stderr = "";
    let output = "";
    const keep = (text: string, chunk: string) => {
      const joined = text + chunk;
      return joined.length > max ? joined.slice(-Math.floor(max / 2)) : joined;
    };
    child.stdout!.setEncoding("utf8");
    child.stderr!.setEncoding("utf8");
    child.stdout!.on("data", (chunk: string) => {
      stdout = keep(stdout, chunk);
      output = keep(output, chunk);
      options.onStdout?.(chunk);
    });
    child.stderr!.on("data", (chunk: string) => {
      stderr = keep(stderr, chunk);
      output = keep(output, chunk);
    });
    let timedOut = false;
    let settled = false;
    const finish = (code: number | null) => {
      if (settled) return;
      settled = true;
      clearTimeout(deadline);
      killGroup(child);
      // Whatever escaped the group (a `setsid` daemon, where no PID namespace holds it) ends too, before
      // the caller reads or writes anything the agent could reach.
      const ended = options.confine?.endAll?.() ?? Promise.resolve();
      ended.then(() => resolve({ code, timedOut, stdout, stderr, output }), reject);
    };
    const deadline = setTimeout(() => {
      timedOut = true;
      finish(null);
    }, options.timeoutMs);
    options.signal?.addEventListener("abort", () => finish(null), { once: true });
    child.on("error", (error) => {
      stderr += error.message;
      finish(-1);
    });
    // Output still in the pipes is read for a moment; what a leftover grandchild holds open is not awaited.
    child.on("exit", (code) => setTimeout(() => finish(code), DRAIN_MS).unref());
    child.on("close", (code) => finish(code));
    // A command that exits without reading its input (or was never found) closes the pipe: its exit
    // code says what happened, the pipe's EPIPE would only crash the caller.
    child.stdin?.on("error", () => {});
    if (options.input !== undefined) child.stdin!.end(options.input);
  });
}
