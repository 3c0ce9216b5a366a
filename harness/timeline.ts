/**
 * Simulated time for the stand-in: what takes minutes on GitHub (a runner picking a job up, a task's
 * agent, CI, the schedule) is an entry on the fake GitHub's clock, and the clock moves to the next
 * entry only once every piece of work in progress (real work: requests, the orchestrator's runs) is
 * done. So a run of hours takes the wall time of its work, and GitHub's hourly limits are met as they
 * would be.
 */
import type { FakeClock } from "./fake-rate-limits.ts";

interface Entry {
  at: number;
  seq: number;
  fire: () => void;
}

export class Timeline {
  private readonly entries: Entry[] = [];
  private seq = 0;

  constructor(
    readonly clock: FakeClock,
    /** Whether work is in progress (the clock waits for it). */
    private readonly busy: () => boolean,
  ) {}

  /** Does `fire` once `ms` of simulated time passed. */
  at(ms: number, fire: () => void): void {
    this.entries.push({ at: this.clock.now() + Math.max(0, ms), seq: this.seq++, fire });
    this.entries.sort((a, b) => a.at - b.at || a.seq - b.seq);
  }

  /** Resolves after `ms` of simulated time. */
  wait(ms: number): Promise<void> {
    return new Promise((done) => this.at(ms, done));
  }

  /** Every `ms` from now on, `fire` (a cron). */
  every(ms: number, fire: () => void): void {
    const tick = () => {
      fire();
      this.at(ms, tick);
    };
    this.at(ms, tick);
  }

  /** Waits until no work is in progress. */
  async quiet(): Promise<void> {
    for (let still = 0; still < 2;) {
      await new Promise((done) => setTimeout(done, 2));
      still = this.busy() ? 0 : still + 1;
    }
  }

  /**
   * Moves time on, entry by entry, until `done` holds (or `forMs` of simulated time have passed);
   * throws when nothing is left to happen and `done` does not hold.
   */
  async run(done: () => boolean, forMs = 7 * 24 * 3_600_000): Promise<void> {
    const end = this.clock.now() + forMs;
    for (;;) {
      await this.quiet();
      if (done()) return;
      const next = this.entries[0];
      if (!next || next.at > end) {
        if (next) this.clock.advanceTo(end);
        if (done() || next) return;
        throw new Error("nothing is left to happen, and the run has not ended");
      }
      this.entries.shift();
      this.clock.advanceTo(next.at);
      next.fire();
    }
  }
}
