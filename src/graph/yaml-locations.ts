/**
 * Where a loaded YAML document's nodes are in its text: the source offsets of every collection's
 * entries, kept compactly for the whole document, and the 1-based line and column of an offset.
 * Errors name the file, line and column of the node at fault with them (yaml.ts).
 */
import type { PathSegment } from "./errors.ts";
import { keepHiddenClass } from "./hidden-class.ts";

/**
 * Source offsets of every collection, in flat arrays shared by the whole document: a 10,000-task graph
 * has tens of thousands of collections, and an object and two arrays for each is most of what loading
 * allocates beyond the values themselves (and what the collector then has to copy).
 *
 * The entries of collection c (numbered as it closes) are `first[c]` to `first[c] + count[c] - 1` of
 * `names` (mapping keys in declaration order; "" for sequence items) and of `offsets` (entry e at [2e]
 * is the key's offset, at [2e + 1] the value's; an item's both are its own).
 */
export class Locations {
  private readonly index = new Map<object, number>();
  private readonly first: number[] = [];
  private readonly count: number[] = [];
  private readonly names: string[] = [];
  private readonly offsets: number[] = [];

  /** Records the first `size` entries of `entryNames` and `entryOffsets`. */
  add(
    collection: object,
    entryNames: readonly string[],
    entryOffsets: readonly number[],
    size: number,
  ): void {
    this.index.set(collection, this.first.length);
    this.first.push(this.names.length);
    this.count.push(size);
    for (let i = 0; i < size; i++) {
      this.names.push(entryNames[i]!);
      this.offsets.push(entryOffsets[2 * i]!, entryOffsets[2 * i + 1]!);
    }
  }

  has(value: unknown): value is object {
    return value !== null && typeof value === "object" && this.index.has(value);
  }

  /** Keys of a mapping in declaration order. */
  keys(mapping: object): string[] {
    const c = this.index.get(mapping);
    return c === undefined
      ? Object.keys(mapping)
      : this.names.slice(this.first[c], this.first[c]! + this.count[c]!);
  }

  /** Offsets of an entry of a collection (a key of a mapping, a position in a sequence): [key, value], or null. */
  entry(collection: object, entry: PathSegment): [number, number] | null {
    const c = this.index.get(collection)!;
    const first = this.first[c]!;
    const count = this.count[c]!;
    let at = -1;
    if (!Array.isArray(collection)) {
      for (let i = 0; i < count && at === -1; i++) if (this.names[first + i] === String(entry)) at = i;
    } else if (typeof entry === "number" && entry < count) {
      at = entry;
    }
    if (at === -1) return null;
    return [this.offsets[2 * (first + at)]!, this.offsets[2 * (first + at) + 1]!];
  }
}

keepHiddenClass(new Locations());

export interface Position {
  line: number;
  column: number;
}

/** Converts a 0-based offset into a 1-based line and column. */
export function positionFinder(text: string): (offset: number) => Position {
  let lineStarts: number[] | undefined;
  return (offset) => {
    if (!lineStarts) {
      lineStarts = [0];
      for (let i = text.indexOf("\n"); i !== -1; i = text.indexOf("\n", i + 1)) lineStarts.push(i + 1);
    }
    let lo = 0;
    let hi = lineStarts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (lineStarts[mid]! <= offset) lo = mid;
      else hi = mid - 1;
    }
    return { line: lo + 1, column: offset - lineStarts[lo]! + 1 };
  };
}
