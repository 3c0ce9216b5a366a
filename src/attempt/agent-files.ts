/**
 * Files in places the agent writes (its checkout, the attempt's signal directory), read and written
 * by the runner, which may be root. Whatever the agent left there is data: a symbolic link is not
 * followed (it could lead to the runner's own environment, `/proc/self/environ`, or to a program the
 * runner runs), a FIFO is not waited on, a device is not read, and only so much is read. The runner
 * reads and writes them once every process of the agent has ended, so nothing changes under it.
 */
import { closeSync, constants, fstatSync, openSync, readSync, rmSync, writeFileSync } from "node:fs";

/** The most the runner reads of a file the agent wrote, unless told otherwise. */
export const AGENT_FILE_MAX = 1024 * 1024;

/**
 * The text of the regular file at `path` (its first `max` bytes), or null when there is none: absent,
 * a link, a directory, a FIFO or a device.
 */
export function readAgentFile(path: string, max = AGENT_FILE_MAX): string | null {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return null;
  }
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) return null;
    const buffer = Buffer.alloc(Math.min(stat.size, max));
    let read = 0;
    while (read < buffer.length) {
      const n = readSync(fd, buffer, read, buffer.length - read, read);
      if (n === 0) break;
      read += n;
    }
    return buffer.subarray(0, read).toString("utf8");
  } finally {
    closeSync(fd);
  }
}

/** Writes `text` to `path` as a new file: what the agent put there before (a link, say) is removed, not followed. */
export function writeInAgentDir(path: string, text: string): void {
  rmSync(path, { force: true });
  writeFileSync(path, text, { flag: "wx" });
}
