/**
 * The agent's own user. Where the runner is root (the Action's job container), the agent's commands
 * run as a user and group of their own: not root, no supplementary group, no capability, no new
 * privileges (`setpriv`). The user owns its checkout, its home and temporary directory and what it
 * writes in the attempt's work directory, and nothing else: so it cannot rewrite a program the runner
 * runs (root's files are not its own), read the runner's environment (`/proc/PID/environ` of another
 * user), connect to a socket only root or a group may use (the Docker socket), or change the runner's
 * git directory. This holds whether or not the network is filtered.
 *
 * After each of its commands every process of the user is ended, without a namespace: a process of
 * that user signals every process it may (kill -1), again until /proc shows none left, so a `setsid`
 * daemon cannot outlive the command and rewrite what the runner writes next. Attempts that share a
 * machine (a runner that is not a container) each get a user of their own, claimed with a lock file
 * in a directory only root writes.
 */
import { execFileSync, spawn, spawnSync } from "node:child_process";
import {
  chmodSync,
  chownSync,
  lchownSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { containPrefix, processLine, stillRunning } from "./bounded.ts";
import { checkPrograms, programPath } from "./programs.ts";

/** The group of every agent's user: the network rules of a job container filter its sockets. */
export const AGENT_GID = 61_000;
/** The first agent user; an attempt takes the first one no other live attempt holds. */
export const AGENT_UID = 61_000;
const AGENT_UIDS = 1_000;

export class AgentUserError extends Error {
  override name = "AgentUserError";
}

export interface AgentUser {
  uid: number;
  gid: number;
  /** Put before an agent's command (after a namespace's entry): it then runs as this user, with nothing more. */
  prefix: string[];
  /** The agent's HOME and TMPDIR: its own. */
  home: string;
  tmp: string;
  /** Gives `path` and everything below it to the user (links are not followed). */
  give(path: string): void;
  /** Ends every process of the user; throws when some cannot be ended. */
  endAll(): Promise<void>;
  /** Ends the user's processes and gives the user up. */
  release(): Promise<void>;
}

/** Whether this runner can give an agent a user of its own: root on Linux, with setpriv. */
export function agentUserPossible(): boolean {
  return (
    process.platform === "linux" &&
    process.geteuid?.() === 0 &&
    spawnSync(programPath("setpriv"), ["--version"], { stdio: "ignore" }).status === 0
  );
}

/** What takes every capability from a command and keeps it from gaining any (a setuid program's included). */
export const NO_PRIVILEGES = [
  "--inh-caps=-all",
  "--ambient-caps=-all",
  "--bounding-set=-all",
  "--no-new-privs",
];

/** Put before a command: it runs with no capability and cannot gain one, as the same user. */
export function dropPrivileges(): string[] {
  return [programPath("setpriv"), ...NO_PRIVILEGES, "--"];
}

/** Put before a command: it runs as `uid`, in the agents' group alone, with no privilege. */
function switchTo(uid: number): string[] {
  return [
    programPath("setpriv"),
    `--reuid=${uid}`,
    `--regid=${AGENT_GID}`,
    "--clear-groups",
    ...NO_PRIVILEGES,
    "--",
  ];
}

/** Processes that still run as `uid` (by any of its ids; zombies, which run nothing, aside). */
export function processesOf(uid: number): number[] {
  const left: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    let status: string;
    try {
      status = readFileSync(`/proc/${entry}/status`, "utf8");
    } catch {
      continue; // gone meanwhile
    }
    const state = /^State:\s+(\S)/m.exec(status)?.[1];
    const ids = /^Uid:\s+(.*)$/m.exec(status)?.[1]?.split(/\s+/).map(Number) ?? [];
    if (state !== "Z" && state !== "X" && ids.includes(uid)) left.push(Number(entry));
  }
  return left;
}

/** The program that ends every process of its user: run as that user, it signals all it may. */
const KILL_ALL = "try { process.kill(-1, 'SIGKILL') } catch {}";

/** Ends every process of `uid`, checked in /proc; throws with the survivors after a few seconds. */
export async function endProcessesOf(uid: number): Promise<void> {
  for (let round = 0; round < 100; round++) {
    if (processesOf(uid).length === 0) return;
    await new Promise<void>((resolve) => {
      const killer = spawn(process.execPath, ["-e", KILL_ALL], { uid, gid: AGENT_GID, stdio: "ignore" });
      killer.on("error", () => resolve());
      killer.on("close", () => resolve());
    });
    // Killed processes are reaped by their parents; a moment for that before looking again.
    if (processesOf(uid).length > 0) await new Promise((resolve) => setTimeout(resolve, 20 + round * 5));
  }
  const left = processesOf(uid);
  if (left.length > 0)
    throw new AgentUserError(
      `processes of the agent's user (uid ${uid}) could not be ended: ${left.slice(0, 10).join(", ")}`,
    );
}

/** The directory where attempts on this machine claim their users: root's alone. */
function claimsDir(): string {
  const dir = join(tmpdir(), "agentrelay-agent-users");
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const stat = lstatSync(dir);
  if (!stat.isDirectory() || stat.uid !== 0 || (stat.mode & 0o022) !== 0)
    throw new AgentUserError(`${dir} is not a directory that only root may write: remove it`);
  return dir;
}

/**
 * Runs `work` while this runner alone holds the claims directory (a directory made inside it is the
 * lock: making one is atomic), so that two attempts starting together never claim one user.
 */
async function withClaimsLocked<T>(dir: string, work: () => T): Promise<T> {
  const lock = join(dir, ".lock");
  for (let tries = 0; ; tries++) {
    try {
      mkdirSync(lock);
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      // A claim takes milliseconds: a lock this old is a dead runner's.
      const age = Date.now() - (lstatSync(lock, { throwIfNoEntry: false })?.mtimeMs ?? Date.now());
      if (age > 10_000) rmSync(lock, { recursive: true, force: true });
      if (tries >= 1_000) throw new AgentUserError(`${lock} stays taken: remove it if no attempt runs`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }
  try {
    return work();
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

/** Claims the first agent user no live attempt holds (its claim names a runner that still runs). */
async function claimUid(): Promise<{ uid: number; unclaim: () => void }> {
  const dir = claimsDir();
  return withClaimsLocked(dir, () => {
    for (let uid = AGENT_UID; uid < AGENT_UID + AGENT_UIDS; uid++) {
      const file = join(dir, String(uid));
      const claim = lstatSync(file, { throwIfNoEntry: false }) ? readFileSync(file, "utf8") : null;
      // A claim whose runner died is free again.
      if (claim !== null && stillRunning(claim) !== null) continue;
      writeFileSync(file, processLine(process.pid), { mode: 0o600 });
      return { uid, unclaim: () => rmSync(file, { force: true }) };
    }
    throw new AgentUserError(`every agent user (uid ${AGENT_UID} and up) is taken by a live attempt`);
  });
}

/**
 * Gives `path` and what is below it to uid:gid without following links: a link (one a task committed,
 * say, to a program the runner runs) changes hands itself, never what it points to.
 */
function giveTree(path: string, uid: number, gid: number): void {
  const stat = lstatSync(path);
  if (stat.uid !== uid || stat.gid !== gid) lchownSync(path, uid, gid);
  if (stat.isDirectory()) for (const entry of readdirSync(path)) giveTree(join(path, entry), uid, gid);
}

/**
 * Claims a user for one attempt, ends whatever a dead attempt left running as it, and makes its home
 * and temporary directory under `parent` (which must be searchable by others).
 */
export async function claimAgentUser(parent: string): Promise<AgentUser> {
  const { uid, unclaim } = await claimUid();
  try {
    await endProcessesOf(uid);
    const root = mkdtempSync(join(parent, "agentrelay-agent-"));
    const home = join(root, "home");
    const tmp = join(root, "tmp");
    mkdirSync(home);
    mkdirSync(tmp);
    // The runner's own directory above them stays the runner's: the agent may enter it, not change it.
    chownSync(home, uid, AGENT_GID);
    chownSync(tmp, uid, AGENT_GID);
    chmodSync(root, 0o755);
    const endAll = () => endProcessesOf(uid);
    return {
      uid,
      gid: AGENT_GID,
      prefix: switchTo(uid),
      home,
      tmp,
      give: (path) => giveTree(path, uid, AGENT_GID),
      endAll,
      release: async () => {
        try {
          await endAll();
          rmSync(root, { recursive: true, force: true });
        } finally {
          unclaim();
        }
      },
    };
  } catch (error) {
    unclaim();
    throw error;
  }
}

/** The programs git runs itself (its helpers for https and the rest, in its exec path). */
function gitHelpers(): string[] {
  try {
    const dir = execFileSync(programPath("git"), ["--exec-path"], { encoding: "utf8" }).trim();
    return [dir, ...readdirSync(dir).map((name) => join(dir, name))];
  } catch {
    return [];
  }
}

/** The first directory above `path` (itself included) the user cannot enter, or null. */
function closedTo(path: string, user: { uid: number; gid: number }): string | null {
  for (let dir = path; ; dir = dirname(dir)) {
    const stat = lstatSync(dir);
    const bit = stat.uid === user.uid ? 0o100 : stat.gid === user.gid ? 0o010 : 0o001;
    if ((stat.mode & bit) === 0) return dir;
    if (dirname(dir) === dir) return null;
  }
}

/**
 * Why the agent cannot be run as `user` here, as one line, or null: a program the runner runs once
 * the agent has started that the user could change (programs.ts), or a directory of the agent's it
 * cannot reach.
 */
export function agentUserProblem(
  user: AgentUser,
  where: { repoDir: string; workDir: string; network?: { mode: string } },
): string | null {
  const programs = [
    "git",
    ...gitHelpers(),
    "setpriv",
    ...(containPrefix().length > 0 ? ["unshare"] : []),
    ...(where.network?.mode === "container" ? ["nft"] : []),
    process.execPath,
  ];
  const problem = checkPrograms(programs, user);
  if (problem) return problem;
  for (const dir of [where.repoDir, where.workDir, user.home]) {
    const closed = closedTo(dir, user);
    if (closed)
      return `the agent's user (uid ${user.uid}) cannot reach ${dir}: ${closed} is closed to others; make it searchable (chmod o+x)`;
  }
  return null;
}
