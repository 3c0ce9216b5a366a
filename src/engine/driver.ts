/**
 * The one loop every host drives a run with, so that exactly-once is written (and tested) once.
 *
 * A round loads the run, lets the engine decide on the facts, carries out at once the effects that
 * are harmless to repeat (a branch, a PR, a merge: their facts join the same round), writes the state
 * by compare-and-swap, and only then carries out the effects that must happen once (starting a job,
 * cancelling one, answering a person). A writer that loses the race loads again and decides again;
 * facts an effect produced in a lost round are reused, so no call is repeated; and only the writer
 * whose write lands carries out the once-only effects, so they happen once however many drivers run.
 */
import type { Engine } from "./engine.ts";
import { StateConflictError, type StateStore } from "./store.ts";
import type { EngineEffect, EngineEvent, RunState } from "./types.ts";

export interface LoadedRun<S extends RunState = RunState> {
  state: S;
  version: string;
  engine: Engine;
  /** From the host's memory of what it last saw, not read just now: "nothing to do" is checked afresh. */
  cached?: boolean;
}

/** What the driver does in a round, for the host's own bookkeeping before the write. */
export interface Round {
  /** Facts that changed the state, in the order applied. */
  changed: EngineEvent[];
  /** The once-only effects the round owes, carried out if its write lands. */
  effects: EngineEffect[];
  /** Tasks whose records the round may have changed; a host that changes others adds them. */
  touched: Set<string>;
}

/**
 * Effects whose repetition is harmless (the host recognises what it already did: a branch that
 * exists, a PR already open, a merge already made). They are carried out before the write, so their
 * facts land in the same write; every other effect waits for the write and happens once.
 */
export const REPEATABLE: ReadonlySet<EngineEffect["type"]> = new Set([
  "prepare_workstream",
  "open_task_pr",
  "merge_task_pr",
  "open_integration_pr",
  "merge_integration_pr",
]);

/**
 * A host: where a run is stored, and how effects are carried out (GitHub, a local repository, a test).
 * It writes as its store does (store.ts): by compare-and-swap, handing back what a round left unwritten.
 */
export interface RunHost<S extends RunState = RunState> extends Pick<
  StateStore<S>,
  "compareAndSwap" | "release"
> {
  load(run: string, options: { fresh: boolean }): Promise<LoadedRun<S> | null>;
  /** Carries out a repeatable effect (see REPEATABLE) and answers with the facts it produced. */
  repeatable(effect: EngineEffect, state: S, engine: Engine): Promise<EngineEvent[]>;
  /** Brings the host's own part of the state (ids of what it shows people) up to date; true if it changed. */
  beforeSave?(state: S, engine: Engine, round: Round): Promise<boolean>;
  /** Carries out the once-only effects of a landed round; the facts they produce are driven next. */
  afterWrite(effects: EngineEffect[], state: S, engine: Engine, version: string): Promise<EngineEvent[]>;
  log(message: string): void;
}

export interface DriveOptions<S extends RunState> {
  /** Also carry out what the state says is owed (the reconciler's repair of answers that were lost). */
  pending?: boolean;
  /** The run as the caller has just read it (one read fewer); later rounds read again. */
  loaded?: LoadedRun<S>;
  /** The handed-over run has changes of its own to write. */
  unsaved?: boolean;
  /**
   * Whether the caller keeps the facts and brings them again later rather than have them written now
   * (a runner holding its report while required checks run): asked once the facts are applied, before
   * anything is written or carried out once. When it answers true, nothing is written.
   */
  hold?: (state: S, owed: readonly EngineEffect[]) => boolean;
}

export interface Driven<S extends RunState> {
  state: S;
  version: string;
  /** This call's write landed (the facts, or the host's bookkeeping, changed something). */
  changed: boolean;
  /** The facts were held (DriveOptions.hold): nothing was written, and the caller brings them again. */
  held?: boolean;
}

const ROUNDS = 10;

/** Applies `facts` to the run; null when there is no such run. */
export async function drive<S extends RunState>(
  host: RunHost<S>,
  run: string,
  facts: readonly EngineEvent[],
  options: DriveOptions<S> = {},
): Promise<Driven<S> | null> {
  const produced = new Map<string, EngineEvent[]>();
  let fresh = false;
  for (let round = 0; round < ROUNDS; round++) {
    const loaded = round === 0 && options.loaded ? options.loaded : await host.load(run, { fresh });
    if (!loaded) return null;
    const { state, version, engine } = loaded;
    const before = state.seq;
    const owed: EngineEffect[] = [];
    const queue = [...facts];
    const touched = new Set<string>();
    const carryOut = async (effects: EngineEffect[]) => {
      for (const effect of effects) {
        if (!REPEATABLE.has(effect.type)) {
          owed.push(effect);
          continue;
        }
        let events = produced.get(effect.key);
        if (!events) {
          try {
            events = await host.repeatable(effect, state, engine);
          } catch (error) {
            // The facts so far are still written; the effect stays owed and the reconciler retries it.
            host.log(
              `${effect.key} (${effect.type}) failed, left to the reconciler: ${(error as Error).message}`,
            );
            continue;
          }
          produced.set(effect.key, events);
        }
        queue.push(...events);
      }
    };
    if (options.pending) await carryOut(engine.pendingEffects(state));
    const changed: EngineEvent[] = [];
    for (let i = 0; i < queue.length; i++) {
      const fact = queue[i]!;
      const seq = state.seq;
      await carryOut(engine.apply(state, fact, touched));
      if (state.seq !== seq) changed.push(fact);
    }
    // The state was changed in place: it is not given back (the store builds the next one afresh).
    if (options.hold?.(state, owed)) return { state, version, changed: false, held: true };
    const own = (await host.beforeSave?.(state, engine, { changed, effects: owed, touched })) ?? false;
    const unsaved = round === 0 && options.unsaved === true;
    if (!unsaved && !own && state.seq === before) {
      // Nothing to write, as far as a remembered state tells: ask the store before concluding so.
      if (loaded.cached) {
        fresh = true;
        continue;
      }
      host.release?.(run, state);
      await follow(host, run, await host.afterWrite(owed, state, engine, version));
      return { state, version, changed: false };
    }
    // A handed-over run with changes of its own may have changed any task.
    const written = await host.compareAndSwap(run, version, state, unsaved ? undefined : touched);
    if (written === null) {
      fresh = true;
      continue;
    }
    await follow(host, run, await host.afterWrite(owed, state, engine, written));
    return { state, version: written, changed: true };
  }
  throw new StateConflictError(`gave up on run '${run}' after ${ROUNDS} conflicting writes`);
}

/**
 * Writes a state decided outside a round (a run just started, or resumed with a changed graph) and
 * carries out its effects: once-only ones if this write lands, repeatable ones through a round (the
 * state records them as owed). The new version, or null when another writer got there first.
 */
export async function settle<S extends RunState>(
  host: RunHost<S>,
  run: string,
  expected: string | null,
  decided: { state: S; effects: EngineEffect[] },
  engine: Engine,
): Promise<string | null> {
  const version = await host.compareAndSwap(run, expected, decided.state);
  if (version === null) return null;
  const once = decided.effects.filter((e) => !REPEATABLE.has(e.type));
  await follow(host, run, await host.afterWrite(once, decided.state, engine, version));
  await drive(host, run, [], { pending: true });
  return version;
}

/** Facts the once-only effects produced (a dispatch GitHub refused, say) are driven in turn. */
async function follow<S extends RunState>(
  host: RunHost<S>,
  run: string,
  facts: EngineEvent[],
): Promise<void> {
  if (facts.length > 0) await drive(host, run, facts);
}
