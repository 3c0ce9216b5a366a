/**
 * The live view as a person sees it: its output fed to a real terminal emulator (xterm.js, headless)
 * of a given size, and the screen and scrollback read back.
 */
import { Terminal } from "@xterm/headless";
import { describe, expect, it } from "vitest";
import { LiveView } from "../../src/cli/live-view.ts";
import { createEngine } from "../../src/engine/engine.ts";
import type { RunState, TaskStatus } from "../../src/engine/types.ts";
import { graphOf } from "../support/graphs.ts";

function runOf(tasks: number): RunState {
  const ids = Array.from({ length: tasks }, (_, i) => ({ id: `task_${String(i).padStart(3, "0")}` }));
  return createEngine(graphOf(ids)).start(0).state;
}

/** A terminal of `rows` x `columns`, as a tty shows what is written (newline to CR LF). */
function terminal(rows: number, columns: number) {
  const term = new Terminal({ rows, cols: columns, convertEol: true, allowProposedApi: true });
  let pending = Promise.resolve();
  const screen = {
    rows,
    columns,
    write: (text: string) => {
      pending = pending.then(() => new Promise<void>((done) => term.write(text, done)));
    },
  };
  const read = async () => {
    await pending;
    const buffer = term.buffer.active;
    const lines: string[] = [];
    for (let i = 0; i < buffer.length; i++) lines.push(buffer.getLine(i)!.translateToString(true));
    return { lines, scrolledAway: buffer.length - rows };
  };
  return { screen, read };
}

const STATUSES: TaskStatus[] = ["running", "pr_open", "merged", "failed"];

describe("the live view", () => {
  it("redraws a 40-task run in place within a 24-row terminal, however many times it changes", async () => {
    const { screen, read } = terminal(24, 80);
    const view = new LiveView(screen, true, () => 90_000);
    const state = runOf(40);
    for (let change = 0; change < 428; change++) {
      const task = Object.values(state.tasks)[change % 40]!;
      task.status = STATUSES[change % STATUSES.length]!;
      task.attempt = 1;
      view.update(state);
    }
    view.stop();
    const { lines, scrolledAway } = await read();
    expect(scrolledAway).toBe(0);
    expect(lines.filter((l) => l.startsWith("g/1: "))).toHaveLength(1);
    const shown = lines.filter((l) => /^ {2}task_\d{3} /.test(l));
    expect(shown).toHaveLength(21);
    // What needs attention comes first: every failed task is on the screen.
    const failed = Object.entries(state.tasks).filter(([, t]) => t.status === "failed");
    for (const [id] of failed)
      expect(shown.some((l) => l.includes(`${id} `) && l.includes("failed"))).toBe(true);
    expect(lines).toContain(`  … ${40 - 21} more`);
  });

  it("shows every task when they fit, in plan order", async () => {
    const { screen, read } = terminal(24, 80);
    const view = new LiveView(screen, true, () => 0);
    view.update(runOf(5));
    view.update(runOf(5));
    view.stop();
    const { lines } = await read();
    expect(lines.filter((l) => l.trim()).map((l) => l.trim().split(/\s+/)[0])).toEqual([
      "g/1:",
      "task_000",
      "task_001",
      "task_002",
      "task_003",
      "task_004",
    ]);
  });

  it("cuts lines to a narrow terminal's width instead of letting them wrap", async () => {
    const { screen, read } = terminal(10, 30);
    const view = new LiveView(screen, true, () => 0);
    const state = runOf(3);
    for (let i = 0; i < 50; i++) view.update(state);
    view.stop();
    const { lines, scrolledAway } = await read();
    expect(scrolledAway).toBe(0);
    expect(lines.every((l) => l.length < 30)).toBe(true);
    expect(lines.filter((l) => l.startsWith("g/1"))).toHaveLength(1);
  });

  it("writes one line per change when not on a terminal", () => {
    const written: string[] = [];
    const view = new LiveView({ write: (t) => written.push(t) }, false, () => 61_000);
    const state = runOf(2);
    view.update(state);
    view.update(state);
    state.tasks.task_000!.status = "running";
    view.update(state);
    view.stop();
    expect(written.join("").trimEnd().split("\n")).toEqual([
      "  1:01  task_000                 pending",
      "  1:01  task_001                 pending",
      "  1:01  task_000                 running",
    ]);
  });

  it("shows the resolutions running first, within the window, and each start and end in a pipe", async () => {
    const state = runOf(30);
    const resolution = (n: number, outcome: "succeeded" | null) => ({
      n,
      dispatchedAt: 0,
      outcome,
      reason: null,
      costMicros: null,
      turns: null,
    });
    state.workstreams.default!.conflict = { files: ["a.txt"], resolutions: [resolution(1, null)] };
    const { screen, read } = terminal(10, 80);
    const view = new LiveView(screen, true, () => 0);
    view.update(state);
    view.stop();
    const { lines, scrolledAway } = await read();
    expect(scrolledAway).toBe(0);
    expect(lines[1]).toBe("  default (integration)    resolving  attempt 1");
    const written: string[] = [];
    const pipe = new LiveView({ write: (t) => written.push(t) }, false, () => 0);
    pipe.update(state);
    state.workstreams.default!.conflict.resolutions[0] = resolution(1, "succeeded");
    pipe.update(state);
    expect(written.filter((l) => l.includes("(integration)"))).toEqual([
      "  0:00  default (integration)    resolving conflicts (resolution 1)\n",
      "  0:00  default (integration)    resolution 1 succeeded\n",
    ]);
  });
});
