/**
 * The local runner's inbox takes steering commands from other terminals of the same user: whatever
 * else lands there (a null message, a directory, a FIFO, a link to /dev/zero, a huge file, another
 * user's file, a `replies` that is a file) is moved aside with a line, and the runner goes on.
 */
import { spawnSync } from "node:child_process";
import {
  chownSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { answer, awaitAnswer, MAX_MESSAGE, post, take } from "../../src/local/inbox.ts";

const root = () => mkdtempSync(join(tmpdir(), "agentrelay-inbox-"));

describe("the local runner's inbox", () => {
  it("takes commands, and moves aside with a line what is not one, without blocking or following links", () => {
    const work = root();
    const inbox = join(work, "inbox");
    mkdirSync(inbox, { recursive: true });
    const good = post(work, { command: "retry", task: "a" });
    writeFileSync(join(inbox, "1-null.json"), "null");
    writeFileSync(join(inbox, "2-garbage.json"), "{not json");
    writeFileSync(join(inbox, "3-budget.json"), JSON.stringify({ command: "budget", usd: 1e303, id: "x" }));
    mkdirSync(join(inbox, "4-dir.json"));
    expect(spawnSync("mkfifo", [join(inbox, "5-fifo.json")]).status).toBe(0);
    symlinkSync("/dev/zero", join(inbox, "6-zero.json"));
    writeFileSync(join(inbox, "7-huge.json"), "x".repeat(MAX_MESSAGE + 1));
    const lines: string[] = [];
    const taken = take(work, (line) => lines.push(line));
    expect(taken).toEqual([{ id: good, command: { command: "retry", task: "a" } }]);
    expect(readdirSync(inbox)).toEqual([]);
    const why = (name: string) => lines.find((l) => l.includes(`/inbox/${name} was moved`))!;
    expect(why("1-null.json")).toMatch(/: it is not a steering command$/);
    expect(why("2-garbage.json")).toMatch(/: it is not a steering command$/);
    expect(why("3-budget.json")).toMatch(/: it is not a steering command$/);
    expect(why("4-dir.json")).toMatch(/: it is not a regular file$/);
    expect(why("5-fifo.json")).toMatch(/: it is not a regular file$/);
    expect(why("6-zero.json")).toMatch(/: it is a symbolic link$/);
    expect(why("7-huge.json")).toMatch(new RegExp(`: it is larger than ${MAX_MESSAGE} bytes$`));
    expect(readdirSync(join(work, "inbox-rejected"))).toHaveLength(7);
    // The sender of a message that was not a command hears so.
    expect(existsSync(join(work, "replies", "1-null.json"))).toBe(true);
  });

  it("keeps the inbox its owner's alone, and refuses another user's message", () => {
    const work = root();
    const inbox = join(work, "inbox");
    mkdirSync(inbox, { recursive: true, mode: 0o777 });
    spawnSync("chmod", ["0777", inbox]);
    const id = post(work, { command: "cancel" });
    const lines: string[] = [];
    if (process.getuid?.() === 0) {
      writeFileSync(join(inbox, "0-other.json"), JSON.stringify({ command: "cancel" }));
      chownSync(join(inbox, "0-other.json"), 65_534, 65_534);
    }
    const taken = take(work, (line) => lines.push(line));
    expect(taken.map((t) => t.id)).toEqual([id]);
    expect(statSync(inbox).mode & 0o777).toBe(0o700);
    if (process.getuid?.() === 0)
      expect(lines.join("\n")).toMatch(/0-other\.json was moved .*: it belongs to another user/);
  });

  it("answers where `replies` was replaced by a file, moving the file aside", async () => {
    const work = root();
    writeFileSync(join(work, "replies"), "not a directory");
    const lines: string[] = [];
    answer(work, "42", { ok: true, message: "done" }, (line) => lines.push(line));
    expect(lstatSync(join(work, "replies")).isDirectory()).toBe(true);
    expect(lines[0]).toMatch(/replies was moved .*: it is not a directory/);
    expect(await awaitAnswer(work, "42", 1_000)).toEqual({ ok: true, message: "done" });
  });
});
