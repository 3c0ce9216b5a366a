/**
 * The StateStore port: a run's state document, read with its version and written only by
 * compare-and-swap. Adapters (in memory, a local git ref, a GitHub branch) implement it; the driver
 * (driver.ts) is the one loop that applies events through it.
 */
import type { Decision, Engine } from "./engine.ts";
import type { RunState } from "./types.ts";

export interface Versioned {
  state: RunState;
  /** Opaque version (a commit id, a counter); compare-and-swap takes it back. */
  version: string;
  /** True when it came from the adapter's cache of what it last saw, not from a read just now. */
  cached?: boolean;
}

/** A store of run states; `S`, the state a host keeps (the GitHub host adds its own ids to it). */
export interface StateStore<S extends RunState = RunState> {
  /**
   * The run's state, as a fresh copy the caller may change, with its version. An adapter may answer
   * from a cache of what it last read or wrote unless `fresh` is asked for; a stale answer is caught
   * by the compare-and-swap of the next write.
   */
  load(run: string, options?: { fresh?: boolean }): Promise<Versioned | null>;
  /**
   * Writes `next` if the stored version is still `expected` (null: the run must not exist yet).
   * Returns the new version, or null when another writer got there first. `touched` names the tasks
   * whose records may differ from the version read (absent: any may), for stores that write parts.
   */
  compareAndSwap(
    run: string,
    expected: string | null,
    next: S,
    touched?: ReadonlySet<string>,
  ): Promise<string | null>;
  /** A round that wrote nothing hands back the state it loaded (stores that lend it out). */
  release?(run: string, state: S): void;
}

export class StateConflictError extends Error {
  override name = "StateConflictError";
}

/** Creates a run if it does not exist yet; returns the effects only to the writer that created it. */
export async function startRun(
  store: StateStore,
  engine: Engine,
  at: number,
): Promise<Decision & { version: string; created: boolean }> {
  const decision = engine.start(at);
  const run = decision.state.runKey;
  const version = await store.compareAndSwap(run, null, decision.state);
  if (version !== null) return { ...decision, version, created: true };
  const existing = await store.load(run);
  if (!existing) throw new StateConflictError(`run '${run}' vanished while being created`);
  return { state: existing.state, effects: [], version: existing.version, created: false };
}

/** A store in memory (tests). Copies on the way in and out, like a real store: `load` returns a fresh copy. */
export class MemoryStateStore implements StateStore {
  private readonly runs = new Map<string, { json: string; version: number }>();

  async load(run: string): Promise<Versioned | null> {
    const entry = this.runs.get(run);
    return entry ? { state: JSON.parse(entry.json) as RunState, version: String(entry.version) } : null;
  }

  async compareAndSwap(run: string, expected: string | null, next: RunState): Promise<string | null> {
    const entry = this.runs.get(run);
    if ((entry ? String(entry.version) : null) !== expected) return null;
    const version = (entry?.version ?? 0) + 1;
    this.runs.set(run, { json: JSON.stringify(next), version });
    return String(version);
  }
}
