/**
 * Steering a live local run from another terminal, as slash commands steer a run on GitHub: a
 * command is a file dropped in the run's inbox (written whole, then renamed into place), the runner
 * takes it, applies it through its driver, and leaves its answer beside it for the sender.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { randomUUID } from "node:crypto";

export type SteeringCommand =
  | { command: "retry" | "cancel" | "reset"; task?: string }
  /** `id` names the request, so that one taken twice raises the budget once. */
  | { command: "budget"; usd: number; target?: string; id: string };

export interface Answer {
  ok: boolean;
  message: string;
}

const inbox = (workRoot: string) => join(workRoot, "inbox");
const answers = (workRoot: string) => join(workRoot, "replies");

/** Puts a command in the inbox; its id names the answer to wait for. */
export function post(workRoot: string, command: SteeringCommand): string {
  const id = `${Date.now()}-${randomUUID()}`;
  mkdirSync(inbox(workRoot), { recursive: true });
  const file = join(inbox(workRoot), `${id}.json`);
  writeFileSync(`${file}.tmp`, JSON.stringify(command));
  renameSync(`${file}.tmp`, file);
  return id;
}

/** Takes the commands waiting in the inbox, oldest first. */
export function take(workRoot: string): { id: string; command: SteeringCommand }[] {
  if (!existsSync(inbox(workRoot))) return [];
  const taken: { id: string; command: SteeringCommand }[] = [];
  for (const name of readdirSync(inbox(workRoot))
    .filter((n) => n.endsWith(".json"))
    .sort()) {
    const file = join(inbox(workRoot), name);
    const id = name.slice(0, -".json".length);
    try {
      taken.push({ id, command: JSON.parse(readFileSync(file, "utf8")) as SteeringCommand });
    } catch {
      answer(workRoot, id, { ok: false, message: "the command file could not be read" });
    }
    rmSync(file, { force: true });
  }
  return taken;
}

export function answer(workRoot: string, id: string, reply: Answer): void {
  mkdirSync(answers(workRoot), { recursive: true });
  const file = join(answers(workRoot), `${id}.json`);
  writeFileSync(`${file}.tmp`, JSON.stringify(reply));
  renameSync(`${file}.tmp`, file);
}

/** The runner's answer to command `id`, or null if none came within `timeoutMs`. */
export async function awaitAnswer(workRoot: string, id: string, timeoutMs: number): Promise<Answer | null> {
  const file = join(answers(workRoot), `${id}.json`);
  for (const until = Date.now() + timeoutMs; Date.now() < until;) {
    if (existsSync(file)) {
      const reply = JSON.parse(readFileSync(file, "utf8")) as Answer;
      rmSync(file, { force: true });
      return reply;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return null;
}
