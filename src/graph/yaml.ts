/**
 * Safe YAML loading for graph files.
 *
 * Graph files are untrusted input that becomes git refs, job names and prompts, so loading is strict:
 * a byte cap before parsing, one document only, duplicate keys rejected, only the standard scalar tags,
 * and alias expansion bounded. Scalars resolve as PyYAML's `safe_load` does (YAML 1.1: `yes`/`on` are
 * booleans), because the graphs were written for Python tools. Every node keeps its source offset so
 * that errors can name the file, line and column of the node at fault (yaml-scalars.ts resolves the
 * scalars, yaml-locations.ts keeps the offsets).
 *
 * js-yaml's event parser is used rather than a full document model because it is several times faster
 * (a 10,000-task graph parses in well under 100 ms) and gives offsets for every node.
 */
import {
  EVENT_ID,
  type Event,
  getScalarValue,
  NOT_RESOLVED,
  parseEvents,
  SCALAR_STYLE_DOUBLE_QUOTED,
  SCALAR_STYLE_PLAIN,
  SCALAR_STYLE_SINGLE_QUOTED,
  type ScalarEvent,
} from "js-yaml";
import { GraphError, type GraphIssue, type PathSegment } from "./errors.ts";
import { Locations, type Position, positionFinder } from "./yaml-locations.ts";
import { resolvePlain, STANDARD_SCALAR_TAGS } from "./yaml-scalars.ts";

export interface YamlLimits {
  /** Files larger than this are refused before parsing. */
  maxBytes: number;
  /** Upper bound on nodes after alias expansion (defends against "billion laughs"). */
  maxExpandedNodes: number;
  /** Maximum nesting depth of collections. */
  maxDepth: number;
}

export const DEFAULT_YAML_LIMITS: YamlLimits = {
  maxBytes: 8 * 1024 * 1024,
  maxExpandedNodes: 1_000_000,
  maxDepth: 64,
};

export interface LoadedYaml {
  file: string;
  value: unknown;
  /** Position of the node at `path` (of its key with `which: "key"`); falls back to the nearest ancestor. */
  locate(path: readonly PathSegment[], which?: "value" | "key"): Position;
  /** Keys of the mapping at `path` in the order they were written (JS objects reorder integer-like keys). */
  keyOrder(path: readonly PathSegment[]): string[];
  /** False when the last key of `path` was written as a number, boolean or null (`1:`), not as text. */
  keyIsText(path: readonly PathSegment[]): boolean;
  /** Builds an issue located at `path`. */
  issue(path: readonly PathSegment[], pathText: string, message: string, which?: "value" | "key"): GraphIssue;
  /**
   * Whether a key or a string may hold a NUL: the text has one, or a double-quoted scalar's escape
   * wrote one. When neither, nul.ts need not walk every string of the document to find none.
   */
  mayHoldNul: boolean;
}

/**
 * An open collection. Frames are reused per nesting depth, so that reading a graph allocates one per
 * level rather than one per collection. Its first `size` entries are in `names` and `offsets` (and a
 * sequence's items in `items`): buffers that keep their capacity from one collection to the next.
 * A sequence's array is copied out of `items` as it closes, so it is exactly as long as it needs to be:
 * an array grown by pushing has room for 17 items, and lists of one or two dependencies were then a
 * quarter of a parsed graph (4.7 MB of values for 10,000 tasks, now 3.5 MB), all of which the first
 * young collection after loading has to copy.
 */
interface Frame {
  map: boolean;
  /** The mapping's object; for a sequence, its array once it has closed. */
  value: Record<string, unknown> | readonly unknown[];
  offset: number;
  anchor: string | null;
  size: number;
  names: string[];
  offsets: number[];
  items: unknown[];
  /** Positions of a large mapping's keys, so that finding duplicates stays linear in the file. */
  positions: Map<string, number> | null;
  /** A mapping's key read and waiting for its value (null when none is). */
  key: string | null;
  keyOffset: number;
  mergeKey: boolean;
  /** Keys that came from a `<<` merge; an explicit key may override them once. */
  merged: Set<string> | null;
}

/** Stands for a sequence's array until it closes (nothing can refer to a collection before that). */
const NO_ITEMS: readonly unknown[] = Object.freeze([]);

/** Mappings up to this many keys are searched by a scan, which beats a map for the few keys most have. */
const SCANNED_KEYS = 16;

function addEntry(frame: Frame, name: string, keyOffset: number, valueOffset: number): void {
  frame.names[frame.size] = name;
  frame.offsets[2 * frame.size] = keyOffset;
  frame.offsets[2 * frame.size + 1] = valueOffset;
  frame.positions?.set(name, frame.size);
  frame.size++;
  if (frame.map && frame.size === SCANNED_KEYS && !frame.positions) {
    frame.positions = new Map(frame.names.slice(0, frame.size).map((key, i) => [key, i]));
  }
}

/** Position of a mapping's entry named `name`, or -1. */
function entryOf(frame: Frame, name: string): number {
  if (frame.positions) return frame.positions.get(name) ?? -1;
  for (let i = 0; i < frame.size; i++) if (frame.names[i] === name) return i;
  return -1;
}

class YamlFailure extends Error {
  constructor(
    readonly offset: number,
    message: string,
  ) {
    super(message);
  }
}

function scalarKey(value: unknown, offset: number): string {
  if (value === null) return "null";
  if (typeof value === "string" || typeof value === "number" || typeof value === "boolean")
    return String(value);
  throw new YamlFailure(offset, "mapping keys must be plain scalars");
}

function setKey(mapping: Record<string, unknown>, name: string, value: unknown): void {
  if (name === "__proto__") {
    // Kept as an own property; the object's prototype is never touched.
    Object.defineProperty(mapping, name, { value, enumerable: true, writable: true, configurable: true });
  } else {
    mapping[name] = value;
  }
}

/**
 * Loads a YAML document. Source positions are recorded only when asked for: most loads never report
 * an error, so the first question about a position (or about key order) loads the text again with
 * positions, and the usual load allocates and indexes nothing for them.
 */
export function loadYaml(file: string, text: string, limits: YamlLimits = DEFAULT_YAML_LIMITS): LoadedYaml {
  const loaded = loadDocument(file, text, limits, false);
  let located: LoadedYaml | undefined;
  const withPositions = () => (located ??= loadDocument(file, text, limits, true));
  return {
    file,
    value: loaded.value,
    mayHoldNul: loaded.mayHoldNul,
    locate: (path, which) => withPositions().locate(path, which),
    keyOrder: (path) => withPositions().keyOrder(path),
    keyIsText: (path) => withPositions().keyIsText(path),
    issue: (path, pathText, message, which) => withPositions().issue(path, pathText, message, which),
  };
}

function loadDocument(file: string, text: string, limits: YamlLimits, positions: boolean): LoadedYaml {
  const toPosition = positionFinder(text);
  const fail = (offset: number, message: string): never => {
    const { line, column } = toPosition(offset);
    throw new GraphError([{ file, line, column, path: "", message }]);
  };

  const bytes = Buffer.byteLength(text, "utf8");
  if (bytes > limits.maxBytes) {
    fail(0, `file is ${bytes} bytes, larger than the limit of ${limits.maxBytes} bytes`);
  }

  let events: Event[];
  try {
    events = parseEvents(text, { filename: file, maxDepth: limits.maxDepth });
  } catch (error) {
    const mark = (error as { mark?: { position?: number }; reason?: string }).mark;
    const reason = (error as { reason?: string }).reason ?? String(error);
    return fail(mark?.position ?? 0, `invalid YAML: ${reason}`);
  }

  const locations = positions ? new Locations() : null;
  const anchors = new Map<string, unknown>();
  const frames: Frame[] = [];
  let depth = 0;
  let documents = 0;
  let root: unknown;
  let rootOffset = 0;
  let aliasCount = 0;
  /** Offsets of mapping keys written as numbers, booleans or null. */
  const nonTextKeys = new Set<number>();
  // Only a double-quoted scalar's escapes (\0, \x00, \u0000) make a NUL the text does not hold.
  let mayHoldNul = text.includes("\0");

  const tagOf = (event: { tagStart: number; tagEnd: number }): string | null => {
    if (event.tagStart < 0) return null;
    const raw = text.slice(event.tagStart, event.tagEnd);
    if (raw.startsWith("!!")) return raw.slice(2);
    const verbatim = /^!<tag:yaml\.org,2002:(\w+)>$/.exec(raw);
    return verbatim ? verbatim[1]! : raw;
  };
  const anchorOf = (event: { anchorStart: number; anchorEnd: number }): string | null =>
    event.anchorStart < 0 ? null : text.slice(event.anchorStart, event.anchorEnd);

  const scalar = (event: ScalarEvent): unknown => {
    const source = getScalarValue(text, event);
    if (event.style === SCALAR_STYLE_DOUBLE_QUOTED && !mayHoldNul) mayHoldNul = source.includes("\0");
    const tag = tagOf(event);
    if (tag === null) return event.style === SCALAR_STYLE_PLAIN ? resolvePlain(source) : source;
    const definition = STANDARD_SCALAR_TAGS.get(tag);
    if (!definition)
      throw new YamlFailure(
        event.tagStart,
        `unsupported YAML tag '${text.slice(event.tagStart, event.tagEnd)}'`,
      );
    if (definition === "str") return source;
    const value = definition.resolve(source, true, definition.tagName);
    if (value === NOT_RESOLVED)
      throw new YamlFailure(event.valueStart, `'${source}' is not a valid !!${tag}`);
    return value;
  };

  const emit = (value: unknown, offset: number): void => {
    if (depth === 0) {
      root = value;
      rootOffset = offset;
      return;
    }
    const parent = frames[depth - 1]!;
    if (!parent.map) {
      parent.items[parent.size] = value;
      addEntry(parent, "", offset, offset);
      return;
    }
    if (parent.key === null) {
      if (typeof value !== "string") nonTextKeys.add(offset);
      parent.key = scalarKey(value, offset);
      parent.keyOffset = offset;
      parent.mergeKey = value === "<<";
      return;
    }
    const name = parent.key;
    parent.key = null;
    if (parent.mergeKey) {
      mergeInto(parent, value, offset);
      return;
    }
    const existing = entryOf(parent, name);
    if (existing !== -1) {
      if (!parent.merged?.delete(name)) throw new YamlFailure(parent.keyOffset, `duplicate key '${name}'`);
      parent.offsets[2 * existing] = parent.keyOffset;
      parent.offsets[2 * existing + 1] = offset;
    } else {
      addEntry(parent, name, parent.keyOffset, offset);
    }
    setKey(parent.value as Record<string, unknown>, name, value);
  };

  const mergeInto = (frame: Frame, source: unknown, offset: number): void => {
    for (const item of Array.isArray(source) ? source : [source]) {
      if (item === null || typeof item !== "object" || Array.isArray(item))
        throw new YamlFailure(offset, "a merge key '<<' needs a mapping or a list of mappings");
      for (const name of locations ? locations.keys(item) : Object.keys(item)) {
        if (entryOf(frame, name) !== -1) continue;
        const [keyOffset, valueOffset] = locations?.entry(item, name) ?? [offset, offset];
        setKey(frame.value as Record<string, unknown>, name, (item as Record<string, unknown>)[name]);
        addEntry(frame, name, keyOffset, valueOffset);
        (frame.merged ??= new Set()).add(name);
      }
    }
  };

  const open = (map: boolean, offset: number, anchor: string | null): void => {
    const value = map ? {} : NO_ITEMS;
    const frame = (frames[depth] ??= {
      map,
      value,
      offset,
      anchor,
      size: 0,
      names: [],
      offsets: [],
      items: [],
      positions: null,
      key: null,
      keyOffset: 0,
      mergeKey: false,
      merged: null,
    });
    frame.map = map;
    frame.value = value;
    frame.offset = offset;
    frame.anchor = anchor;
    frame.size = 0;
    frame.positions = null;
    frame.key = null;
    frame.merged = null;
    depth++;
  };

  const close = (): void => {
    const frame = frames[--depth]!;
    if (frame.map && frame.key !== null) throw new YamlFailure(frame.keyOffset, "mapping key has no value");
    if (!frame.map) frame.value = frame.items.slice(0, frame.size);
    locations?.add(frame.value, frame.names, frame.offsets, frame.size);
    if (frame.anchor !== null) anchors.set(frame.anchor, frame.value);
    emit(frame.value, frame.offset);
  };

  try {
    for (const event of events) {
      switch (event.type) {
        case EVENT_ID.DOCUMENT:
          documents++;
          if (documents > 1) throw new YamlFailure(0, "the file holds more than one YAML document");
          break;
        case EVENT_ID.MAPPING: {
          const tag = tagOf(event);
          if (tag !== null && tag !== "map")
            throw new YamlFailure(event.tagStart, `unsupported YAML tag '!!${tag}'`);
          open(true, event.start, anchorOf(event));
          break;
        }
        case EVENT_ID.SEQUENCE: {
          const tag = tagOf(event);
          if (tag !== null && tag !== "seq")
            throw new YamlFailure(event.tagStart, `unsupported YAML tag '!!${tag}'`);
          open(false, event.start, anchorOf(event));
          break;
        }
        case EVENT_ID.SCALAR: {
          const value = scalar(event);
          const anchor = anchorOf(event);
          if (anchor !== null) anchors.set(anchor, value);
          // A quoted scalar is located at its opening quote.
          const quoted =
            event.style === SCALAR_STYLE_SINGLE_QUOTED || event.style === SCALAR_STYLE_DOUBLE_QUOTED;
          emit(value, quoted ? event.valueStart - 1 : event.valueStart);
          break;
        }
        case EVENT_ID.ALIAS: {
          const name = text.slice(event.anchorStart, event.anchorEnd);
          if (!anchors.has(name)) throw new YamlFailure(event.anchorStart - 1, `unknown alias '*${name}'`);
          aliasCount++;
          emit(anchors.get(name), event.anchorStart - 1);
          break;
        }
        case EVENT_ID.POP:
          if (depth > 0) close();
          break;
      }
    }
  } catch (error) {
    if (error instanceof YamlFailure) fail(error.offset, error.message);
    throw error;
  }

  if (documents === 0 || root === undefined || root === null) fail(0, "the file is empty");
  if (aliasCount > 0) {
    const budget = Math.max(limits.maxExpandedNodes, events.length * 2);
    const expanded = expandedSize(root, budget);
    if (expanded > budget) {
      fail(
        0,
        `YAML aliases expand to more than ${budget} nodes; refusing a possible resource-exhaustion file`,
      );
    }
  }

  const walk = (path: readonly PathSegment[]): unknown => {
    let current: unknown = root;
    for (const segment of path) current = (current as Record<string, unknown> | null)?.[segment as string];
    return current;
  };
  const locate = (path: readonly PathSegment[], which: "value" | "key" = "value"): Position =>
    toPosition(offsetOf(path, which));
  const offsetOf = (path: readonly PathSegment[], which: "value" | "key" = "value"): number => {
    let current: unknown = root;
    let offset = rootOffset;
    for (let i = 0; i < path.length && locations?.has(current); i++) {
      const segment = path[i]!;
      const entry = locations!.entry(current, segment);
      if (!entry) break;
      // An empty value (`a:` with nothing after it) has no position of its own: its key's stands in.
      const valueOffset = entry[1] >= 0 ? entry[1] : entry[0];
      offset = i === path.length - 1 && which === "key" ? entry[0] : valueOffset;
      current = (current as Record<string, unknown>)[segment as string];
    }
    return offset;
  };

  return {
    file,
    value: root,
    mayHoldNul,
    locate,
    keyOrder: (path) => {
      const mapping = walk(path);
      if (mapping === null || typeof mapping !== "object") return [];
      return locations ? locations.keys(mapping) : Object.keys(mapping);
    },
    keyIsText: (path) => !nonTextKeys.has(offsetOf(path, "key")),
    issue: (path, pathText, message, which) => ({ file, ...locate(path, which), path: pathText, message }),
  };
}

/** Size of the value tree with aliases expanded, stopping early once `budget` is exceeded. */
function expandedSize(root: unknown, budget: number): number {
  const memo = new Map<object, number>();
  const visit = (value: unknown): number => {
    if (value === null || typeof value !== "object") return 1;
    const known = memo.get(value);
    if (known !== undefined) return known;
    let size = 1;
    for (const child of Array.isArray(value) ? value : Object.values(value)) {
      size += visit(child);
      if (size > budget) break;
    }
    memo.set(value, size);
    return size;
  };
  return visit(root);
}
