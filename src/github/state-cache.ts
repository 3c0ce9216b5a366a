/**
 * An app replica's memory of the run states it read or wrote, kept between webhooks: the app gives
 * each replica one (AppConfig.stateCache), and the state store (state-store.ts) reads through it.
 */
import type { RunState } from "../engine/types.ts";

/** What a replica knows of a run at one version: its parts' texts, and the state they make. */
export interface Entry {
  version: string;
  /** Bucket count, or 0 for a run still stored as one document (the earlier format). */
  buckets: number;
  index: string;
  bucketTexts: string[];
  /** The task ids of each bucket, once worked out. */
  members: string[][] | null;
  /** The pinned graph text and a key naming it (its blob id). */
  graph: { text: string; key: string } | null;
  /** The state these texts make, lent to one caller at a time (the engine changes it in place). */
  state: RunState | null;
  lent: boolean;
}

/**
 * What one app replica last read or wrote for each run. A commit id names its content, so this is a
 * cache of facts, never the truth: a write from it is a compare-and-swap on that id, which GitHub
 * refuses once the branch has moved (then the writer reads afresh). The parsed state is lent to one
 * handler at a time and taken back with its next write, so a busy run is neither parsed nor
 * serialised whole on each event.
 */
export class StateCache {
  private readonly entries = new Map<string, Entry>();

  get(key: string): Entry | undefined {
    return this.entries.get(key);
  }
  set(key: string, entry: Entry): void {
    this.entries.delete(key);
    this.entries.set(key, entry);
    if (this.entries.size > 200) this.entries.delete(this.entries.keys().next().value!);
  }
  /** Forgets what is known at `version` (a write from it failed: it may be stale or half-changed). */
  forget(key: string, version?: string | null): void {
    if (version === undefined || this.entries.get(key)?.version === version) this.entries.delete(key);
  }
}
