/**
 * The programs the runner itself runs (git, setpriv, unshare, nsenter, nft, ip, its own node), each
 * found once on the runner's own PATH, never on the agent's (which starts with a directory the agent
 * writes), and from then on run by that absolute path: a program the agent puts first on a PATH is
 * never the runner's. Where the agent has a user of its own (agent-user.ts), each program the runner
 * may still run once the agent has started is checked before it starts: neither the file nor any
 * directory above it may be the agent's to change, or the attempt is refused with the reason.
 */
import { accessSync, constants, lstatSync, realpathSync, type Stats } from "node:fs";
import { delimiter, dirname, isAbsolute, join } from "node:path";

const found = new Map<string, string>();

/**
 * The absolute path of `name` on the runner's own PATH (its links resolved), found once and then kept;
 * the bare name where none is found (starting it then fails as it would have).
 */
export function programPath(name: string): string {
  if (isAbsolute(name)) return name;
  const known = found.get(name);
  if (known) return known;
  for (const dir of (process.env.PATH ?? "").split(delimiter)) {
    if (!isAbsolute(dir)) continue; // a relative entry names wherever the runner happens to be
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      if (!lstatSync(realpathSync(candidate)).isFile()) continue;
      const path = realpathSync(candidate);
      found.set(name, path);
      return path;
    } catch {
      // not here
    }
  }
  return name;
}

/** A user and group that must not be able to change what the runner runs. */
export interface Outsider {
  uid: number;
  gid: number;
}

/** Whether `user` may change `stat`'s file (write it, or chmod it as its owner). */
function writableBy(stat: Stats, user: Outsider): boolean {
  if (stat.uid === user.uid) return true;
  if (stat.gid === user.gid && (stat.mode & 0o020) !== 0) return true;
  return (stat.mode & 0o002) !== 0;
}

/**
 * Why `user` could change the program at `path` (the file, or any directory above it, which would
 * let it put another file in its place), or null when it cannot. A directory anyone may write with
 * the sticky bit set (/tmp) lets no one replace an entry they do not own.
 */
export function reachableBy(path: string, user: Outsider): string | null {
  let real: string;
  try {
    real = realpathSync(path);
  } catch {
    return `${path} does not exist`;
  }
  let stat = lstatSync(real);
  if (writableBy(stat, user)) return `${real} is writable by the agent's user (uid ${user.uid})`;
  for (let entry = real, dir = dirname(real); ; entry = dir, dir = dirname(dir)) {
    const owner = stat.uid;
    stat = lstatSync(dir);
    const sticky = (stat.mode & 0o1000) !== 0 && owner !== user.uid;
    if (writableBy(stat, user) && !(sticky && stat.uid !== user.uid))
      return `${dir} (above ${entry === real ? real : entry}) is writable by the agent's user (uid ${user.uid})`;
    if (dirname(dir) === dir) return null;
  }
}

/**
 * The runner's programs checked against the agent's user: the first reason one of them is within its
 * reach, as one line that names the program and what to do, or null when none is.
 */
export function checkPrograms(names: readonly string[], user: Outsider): string | null {
  for (const name of names) {
    const path = programPath(name);
    if (!isAbsolute(path)) continue; // not installed: the runner does not run it
    const problem = reachableBy(path, user);
    if (problem)
      return `the runner will not run ${name} where the agent can change it: ${problem}; install it where only root writes (the agent image does)`;
  }
  return null;
}
