/** A driver host over a plain StateStore, for tests: it records every effect it is asked to carry out. */
import type { LoadedRun, RunHost } from "../../src/engine/driver.ts";
import type { Engine } from "../../src/engine/engine.ts";
import type { StateStore } from "../../src/engine/store.ts";
import type { EngineEffect, EngineEvent, RunState } from "../../src/engine/types.ts";

export class RecordingHost implements RunHost {
  /** Every effect carried out, repeatable ones (before writes) and once-only ones (after them). */
  readonly executed: EngineEffect[] = [];
  /** Once-only effects only: what the winning writes owed. */
  readonly once: EngineEffect[] = [];
  readonly logged: string[] = [];

  constructor(
    readonly store: StateStore,
    readonly engine: Engine,
    /** The facts a repeatable effect produces (its answer joins the same write). */
    readonly respond: (effect: EngineEffect) => EngineEvent[] = () => [],
    /** The facts a once-only effect produces (driven next). */
    readonly follow: (effect: EngineEffect) => EngineEvent[] = () => [],
  ) {}

  async load(run: string, options: { fresh: boolean }): Promise<LoadedRun | null> {
    const stored = await this.store.load(run, options);
    return stored ? { ...stored, engine: this.engine } : null;
  }

  compareAndSwap(
    run: string,
    expected: string | null,
    state: RunState,
    touched?: ReadonlySet<string>,
  ): Promise<string | null> {
    return this.store.compareAndSwap(run, expected, state, touched);
  }

  release(run: string, state: RunState): void {
    this.store.release?.(run, state);
  }

  async repeatable(effect: EngineEffect): Promise<EngineEvent[]> {
    this.executed.push(effect);
    return this.respond(effect);
  }

  async afterWrite(effects: EngineEffect[]): Promise<EngineEvent[]> {
    this.executed.push(...effects);
    this.once.push(...effects);
    return effects.flatMap(this.follow);
  }

  log(message: string): void {
    this.logged.push(message);
  }
}
