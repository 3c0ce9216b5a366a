/**
 * Steering a live local run from another terminal, as slash commands steer a run on GitHub: a
 * command is a file dropped in the run's inbox (written whole, then renamed into place), the runner
 * takes it, applies it through its driver, and leaves its answer beside it for the sender.
 *
 * What lies in the inbox is untrusted until read: the inbox is a directory only its owner can write;
 * the runner reads regular files of its own user only, without following links or blocking on a FIFO,
 * at most MAX_MESSAGE bytes, and takes only what the schema accepts. Anything else is moved aside
 * (to `inbox-rejected/`) with one line, and the runner goes on.
 */
import { randomUUID } from "node:crypto";
import {
  chmodSync,
  closeSync,
  constants,
  fstatSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readSync,
  renameSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import { MAX_MICROS } from "../graph/amount.ts";

const steeringCommandSchema = z.union([
  z.strictObject({
    command: z.enum(["retry", "cancel", "reset"]),
    task: z.string().min(1).max(200).optional(),
  }),
  z.strictObject({
    command: z.literal("budget"),
    /** Micro-dollars to add (graph/amount.ts). */
    micros: z.int().positive().max(MAX_MICROS),
    target: z.string().min(1).max(200).optional(),
    /** Names the request, so that one taken twice raises the budget once. */
    id: z.string().min(1).max(200),
  }),
]);

export type SteeringCommand = z.infer<typeof steeringCommandSchema>;

const answerSchema = z.strictObject({ ok: z.boolean(), message: z.string().max(10_000) });

export type Answer = z.infer<typeof answerSchema>;

/** A command is a few hundred bytes: anything much larger is not one. */
export const MAX_MESSAGE = 64 * 1024;

const inbox = (workRoot: string) => join(workRoot, "inbox");
const answers = (workRoot: string) => join(workRoot, "replies");
const rejected = (workRoot: string) => join(workRoot, "inbox-rejected");

/**
 * `dir` as a directory only this user can write: made so if missing, its mode narrowed if it is
 * this user's, and anything else in its place (a file, a link) moved aside.
 */
function ownDirectory(dir: string, aside: (path: string, why: string) => void): void {
  let stat;
  try {
    stat = lstatSync(dir);
  } catch {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    return;
  }
  if (!stat.isDirectory()) {
    aside(dir, "it is not a directory");
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    return;
  }
  if (stat.uid !== process.getuid?.())
    throw new Error(`${dir} belongs to another user: remove it and run again`);
  if ((stat.mode & 0o077) !== 0) chmodSync(dir, 0o700);
}

/** Moves `path` into `inbox-rejected/` (named for when), with a line saying why. */
function moveAside(workRoot: string, log: (line: string) => void) {
  return (path: string, why: string) => {
    mkdirSync(rejected(workRoot), { recursive: true, mode: 0o700 });
    const name = `${Date.now()}-${randomUUID().slice(0, 8)}-${path.split("/").pop()}`;
    renameSync(path, join(rejected(workRoot), name));
    log(`steering: ${path} was moved to ${join(rejected(workRoot), name)}: ${why}`);
  };
}

/**
 * The text of a regular file of this user, read without following a link or waiting on a FIFO, at
 * most `max` bytes; or why it is not one.
 */
export function readOwnFile(path: string, max: number): { text: string } | { error: string } {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return { error: code === "ELOOP" ? "it is a symbolic link" : `it cannot be opened (${code})` };
  }
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) return { error: "it is not a regular file" };
    if (stat.uid !== process.getuid?.()) return { error: "it belongs to another user" };
    if (stat.size > max) return { error: `it is larger than ${max} bytes` };
    const buffer = Buffer.alloc(max + 1);
    const length = readSync(fd, buffer, 0, max + 1, 0);
    if (length > max) return { error: `it is larger than ${max} bytes` };
    return { text: buffer.subarray(0, length).toString("utf8") };
  } finally {
    closeSync(fd);
  }
}

/** The value a message's text holds, or undefined when it is not JSON (the schema then refuses it). */
function jsonOf(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** Puts a command in the inbox; its id names the answer to wait for. */
export function post(workRoot: string, command: SteeringCommand): string {
  const id = `${Date.now()}-${randomUUID()}`;
  mkdirSync(inbox(workRoot), { recursive: true, mode: 0o700 });
  const file = join(inbox(workRoot), `${id}.json`);
  writeFileSync(`${file}.tmp`, JSON.stringify(command), { mode: 0o600 });
  renameSync(`${file}.tmp`, file);
  return id;
}

/** Takes the commands waiting in the inbox, oldest first; what is not one is moved aside. */
export function take(
  workRoot: string,
  log: (line: string) => void = () => undefined,
): { id: string; command: SteeringCommand }[] {
  const aside = moveAside(workRoot, log);
  ownDirectory(inbox(workRoot), aside);
  const taken: { id: string; command: SteeringCommand }[] = [];
  for (const name of readdirSync(inbox(workRoot))
    .filter((n) => n.endsWith(".json"))
    .sort()) {
    const file = join(inbox(workRoot), name);
    const id = name.slice(0, -".json".length);
    const read = readOwnFile(file, MAX_MESSAGE);
    if ("error" in read) {
      aside(file, read.error);
      continue;
    }
    const command = steeringCommandSchema.safeParse(jsonOf(read.text));
    if (!command.success) {
      aside(file, "it is not a steering command");
      answer(workRoot, id, { ok: false, message: "the command file is not a steering command" }, log);
      continue;
    }
    rmSync(file, { force: true });
    taken.push({ id, command: command.data });
  }
  return taken;
}

export function answer(
  workRoot: string,
  id: string,
  reply: Answer,
  log: (line: string) => void = () => undefined,
): void {
  ownDirectory(answers(workRoot), moveAside(workRoot, log));
  const file = join(answers(workRoot), `${id}.json`);
  writeFileSync(`${file}.tmp`, JSON.stringify(reply), { mode: 0o600 });
  renameSync(`${file}.tmp`, file);
}

/** The runner's answer to command `id`, or null if none came within `timeoutMs`. */
export async function awaitAnswer(workRoot: string, id: string, timeoutMs: number): Promise<Answer | null> {
  const file = join(answers(workRoot), `${id}.json`);
  for (const until = Date.now() + timeoutMs; Date.now() < until;) {
    const read = readOwnFile(file, MAX_MESSAGE);
    if ("text" in read) {
      rmSync(file, { force: true });
      const parsed = answerSchema.safeParse(jsonOf(read.text));
      return parsed.success ? parsed.data : { ok: false, message: "the runner's answer could not be read" };
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return null;
}
