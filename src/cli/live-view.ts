/**
 * What `agentrelay run` shows while it runs. On a terminal, a table redrawn in place that always fits
 * the window: a headline with the counts, then the rows that need attention (running, failed, waiting
 * for a merge) before the others, cut to the terminal's height and width, since a cursor cannot move
 * back over lines that scrolled away or wrapped. Elsewhere (a pipe, CI), one line per change.
 */
import type { Conflict, RunState, TaskRun } from "../engine/types.ts";

/** Where the view writes: the process's stdout, or a test's terminal emulator. */
export interface Screen {
  write(text: string): void;
  /** The terminal's size, read at every draw (it may be resized); absent when not a terminal. */
  rows?: number | undefined;
  columns?: number | undefined;
}

const clock = (ms: number) =>
  `${Math.floor(ms / 60_000)}:${String(Math.floor(ms / 1000) % 60).padStart(2, "0")}`;

/** Rows a person acts on or waits for come first; finished and untouched rows fill what room is left. */
const PRIORITY: Record<TaskRun["status"], number> = {
  failed: 0,
  running: 1,
  pr_open: 2,
  blocked: 3,
  cancelled: 4,
  pending: 5,
  merged: 6,
  completed: 6,
};

/** Each resolution of the run: who it is for (a task's PR, a workstream's integration PR) and how it stands. */
function resolutions(state: RunState): { name: string; n: number; running: boolean; status: string }[] {
  const out: { name: string; n: number; running: boolean; status: string }[] = [];
  const add = (name: string, conflict: Conflict | undefined) => {
    for (const r of conflict?.resolutions ?? [])
      out.push({
        name,
        n: r.n,
        running: r.outcome === null,
        status:
          r.outcome === null
            ? `resolving conflicts (resolution ${r.n})`
            : `resolution ${r.n} ${r.outcome}${r.reason ? `: ${r.reason}` : ""}`,
      });
  };
  for (const [id, w] of Object.entries(state.workstreams)) {
    add(`${id} (integration)`, w.conflict);
    for (const [kind, records] of [
      ["verification", w.verification?.runs],
      ["repair", w.verification?.repairs],
    ] as const)
      for (const r of records ?? [])
        out.push({
          name: `${id} (${kind})`,
          n: r.n,
          running: r.outcome === null,
          status:
            r.outcome === null
              ? `${kind === "repair" ? "repairing" : "verifying"} (${kind} ${r.n})`
              : `${kind} ${r.n} ${r.outcome}${r.reason ? `: ${r.reason}` : ""}`,
        });
  }
  for (const [id, t] of Object.entries(state.tasks)) add(`${id} (PR)`, t.conflict);
  return out;
}

export class LiveView {
  private readonly lastStatus = new Map<string, string>();
  private drawn = 0;
  private state: RunState | null = null;
  private readonly timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly screen: Screen,
    private readonly live: boolean,
    private readonly now: () => number = Date.now,
  ) {
    if (live) this.timer = setInterval(() => this.draw(), 500);
  }

  update(state: RunState): void {
    this.state = state;
    if (this.live) return this.draw();
    for (const [id, t] of Object.entries(state.tasks)) {
      const status = `${t.status}${t.attempt > 1 ? ` (attempt ${t.attempt})` : ""}`;
      if (this.lastStatus.get(id) === status) continue;
      this.lastStatus.set(id, status);
      const reason = t.reason && t.status !== "running" ? `: ${t.reason}` : "";
      this.screen.write(
        `${clock(this.now() - state.startedAt).padStart(6)}  ${id.padEnd(24)} ${status}${reason}\n`,
      );
    }
    for (const r of resolutions(state)) {
      const key = `${r.name}#${r.n}`;
      if (this.lastStatus.get(key) === r.status) continue;
      this.lastStatus.set(key, r.status);
      this.screen.write(
        `${clock(this.now() - state.startedAt).padStart(6)}  ${r.name.padEnd(24)} ${r.status}\n`,
      );
    }
  }

  private row(id: string, t: TaskRun): string {
    const attempt = t.attempts[t.attempt - 1];
    const since = attempt?.dispatchedAt ?? this.state!.startedAt;
    const end = t.mergedAt ?? (t.status === "running" || t.status === "pr_open" ? this.now() : since);
    const elapsed = t.attempt > 0 ? clock(end - since) : "";
    const tries = t.attempt > 0 ? `attempt ${t.attempt}` : "";
    return `  ${id.padEnd(24)} ${t.status.padEnd(10)} ${tries.padEnd(10)} ${elapsed}`;
  }

  /** The frame for a window of `rows` x `columns`. */
  frame(rows: number, columns: number): string[] {
    const state = this.state!;
    const tasks = Object.entries(state.tasks);
    const counts = new Map<string, number>();
    for (const [, t] of tasks) counts.set(t.status, (counts.get(t.status) ?? 0) + 1);
    const headline = `${state.runKey}: ${[...counts].map(([s, n]) => `${n} ${s}`).join(", ")}`;
    // Resolutions running come first, an agent being at work on them (half the window at most).
    const resolving = resolutions(state)
      .filter((r) => r.running)
      .slice(0, Math.floor((rows - 2) / 2))
      .map((r) => `  ${r.name.padEnd(24)} ${"resolving".padEnd(10)} attempt ${r.n}`);
    // One row is kept free: the cursor sits on it after the frame.
    const room = Math.max(1, rows - 2 - resolving.length);
    const ordered =
      tasks.length <= room
        ? tasks
        : [...tasks].sort(([, a], [, b]) => PRIORITY[a.status] - PRIORITY[b.status]);
    const shown = ordered.length <= room ? ordered : ordered.slice(0, room - 1);
    const lines = [headline, ...resolving, ...shown.map(([id, t]) => this.row(id, t))];
    if (shown.length < ordered.length) lines.push(`  … ${ordered.length - shown.length} more`);
    return lines.map((l) => (l.length > columns - 1 ? `${l.slice(0, columns - 2)}…` : l));
  }

  private draw(): void {
    if (!this.state) return;
    const lines = this.frame(this.screen.rows ?? 24, this.screen.columns ?? 80);
    // Back to the frame's first line, then each line cleared and rewritten, then whatever is left of
    // a longer previous frame cleared.
    const up = this.drawn > 0 ? `\u001b[${this.drawn}F` : "";
    const stale = this.drawn > lines.length ? "\u001b[J" : "";
    this.screen.write(`${up}${lines.map((l) => `\u001b[2K${l}\n`).join("")}${stale}`);
    this.drawn = lines.length;
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    if (this.live) this.draw();
  }
}
