/**
 * V8 frees the hidden class of a class's instances once none of them is alive, and with it every
 * optimized function that relied on it ("weak objects" deopts). A running app loads a graph, drops it
 * and later loads another: without this, each load ran the loader unoptimized until V8 recompiled it.
 * One instance kept for the life of the process keeps the class.
 */
const kept: object[] = [];

export function keepHiddenClass(instance: object): void {
  kept.push(instance);
}
