/**
 * Secrets in what an attempt added to one file, found by secretlint's recommended rules (never a list
 * of our own), in what the file holds rather than in what a diff shows of it:
 * - a text file (no NUL byte): the lines the new version has that the old one had not (as a multiset:
 *   a line moved or repeated from the old version is not new);
 * - a binary file (one NUL byte is enough, whatever `.gitattributes` says): the runs of printable text
 *   in it, ASCII or UTF-16, at least RUN_MIN characters long, that the old version had not;
 * - in either, text encoded in base64 (either alphabet) or hex, decoded (twice at most) wherever a run
 *   of such characters is long enough to hold a secret; what it decodes to is read for printable runs
 *   as a binary file is.
 * Out of any scanner's reach: a secret split in parts, compressed, encrypted or otherwise transformed,
 * and a kind secretlint does not know.
 */
import { lintSource } from "@secretlint/core";
import { creator as recommended } from "@secretlint/secretlint-rule-preset-recommend";

const SECRETLINT = { rules: [{ id: "@secretlint/secretlint-rule-preset-recommend", rule: recommended }] };

/** The shortest run of printable text read in binary content: shorter than any secret secretlint knows. */
const RUN_MIN = 12;
/**
 * Runs of characters that may be base64 (either alphabet) or hex, each matched whole (a bounded
 * repetition would try again from every character of a shorter run); ENCODED_MIN long at least, to
 * hold a secret.
 */
const ENCODED = /[A-Za-z0-9+/_-]+={0,2}/g;
const ENCODED_MIN = 24;
const HEX = /^(?:[0-9A-Fa-f]{2}){16,}$/;
/** Encoded text inside encoded text is decoded this deep, no deeper. */
const DECODE_DEPTH = 2;

/** A secret found: in which unit (a line, a run of text, a name), where in it, and what secretlint said. */
export interface Hit {
  unit: number;
  /** The secret's place in the unit's text; for an encoded one, the place of the encoded run. */
  start: number;
  end: number;
  /** "base64" or "hex" when the secret was found encoded. */
  encoding: string | null;
  message: string;
}

interface Piece {
  unit: number;
  text: string;
  /** Where a decoded piece's encoded run is in its unit; null for the unit's own text. */
  span: [number, number] | null;
  encoding: string | null;
  depth: number;
}

/** Printable text, one byte a character, and UTF-16 of either byte order: matched whole (see ENCODED). */
const ASCII_RUN = /[\t\n\r\x20-\x7e]+/g;
const UTF16LE_RUN = /(?:[\t\n\r\x20-\x7e]\x00)+/g;
const UTF16BE_RUN = /(?:\x00[\t\n\r\x20-\x7e])+/g;

/** Runs of printable text in bytes: ASCII, and UTF-16 (either byte order), each with where it starts. */
export function printableRuns(bytes: Buffer): { start: number; width: 1 | 2; text: string }[] {
  const latin1 = bytes.toString("latin1");
  const runs: { start: number; width: 1 | 2; text: string }[] = [];
  for (const m of latin1.matchAll(ASCII_RUN))
    if (m[0].length >= RUN_MIN) runs.push({ start: m.index, width: 1, text: m[0] });
  // Without RUN_MIN zero bytes there is no UTF-16 run.
  let zeros = 0;
  for (let i = bytes.indexOf(0); i >= 0 && zeros < RUN_MIN; i = bytes.indexOf(0, i + 1)) zeros++;
  if (zeros < RUN_MIN) return runs;
  // UTF-16 text of one byte order also matches the other's pattern one byte off: of two runs that
  // overlap, the longer is the text.
  const wide = [...latin1.matchAll(UTF16LE_RUN), ...latin1.matchAll(UTF16BE_RUN)]
    .filter((m) => m[0].length >= 2 * RUN_MIN)
    .sort((a, b) => a.index - b.index);
  const kept: RegExpExecArray[] = [];
  for (const m of wide) {
    const last = kept.at(-1);
    if (!last || last.index + last[0].length <= m.index) kept.push(m);
    else if (m[0].length > last[0].length) kept[kept.length - 1] = m;
  }
  for (const m of kept) {
    const lowFirst = m[0].charCodeAt(1) === 0;
    runs.push({ start: lowFirst ? m.index : m.index + 1, width: 2, text: m[0].replaceAll("\0", "") });
  }
  return runs.sort((a, b) => a.start - b.start);
}

/** What each long run of base64 or hex characters in a piece decodes to, as printable runs. */
function decoded(piece: Piece): Piece[] {
  const out: Piece[] = [];
  for (const m of piece.text.matchAll(ENCODED)) {
    if (m[0].length < ENCODED_MIN) continue;
    const span: [number, number] = piece.span ?? [m.index, m.index + m[0].length];
    const tries: [string, Buffer][] = [["base64", Buffer.from(m[0], "base64")]];
    if (HEX.test(m[0])) tries.push(["hex", Buffer.from(m[0], "hex")]);
    for (const [encoding, bytes] of tries)
      for (const run of printableRuns(bytes))
        out.push({
          unit: piece.unit,
          text: run.text,
          span,
          encoding: piece.encoding ?? encoding,
          depth: piece.depth + 1,
        });
  }
  return out;
}

/**
 * Secrets in `units` (lines, runs or names), also encoded: one secretlint pass over all of them, each
 * unit a line of its own, as a file called `filePath` (some rules look at the name: `.npmrc`,
 * `package.json`).
 */
async function secretsInUnits(filePath: string, units: readonly string[]): Promise<Hit[]> {
  if (units.length === 0) return [];
  const pieces: Piece[] = units.map((text, unit) => ({ unit, text, span: null, encoding: null, depth: 0 }));
  for (let i = 0; i < pieces.length; i++)
    if (pieces[i]!.depth < DECODE_DEPTH) pieces.push(...decoded(pieces[i]!));
  const starts: number[] = [];
  let at = 0;
  for (const piece of pieces) {
    starts.push(at);
    at += piece.text.length + 1;
  }
  const result = await lintSource({
    source: { filePath, content: pieces.map((p) => p.text).join("\n"), contentType: "text" },
    options: { config: SECRETLINT, maskSecrets: true, noPhysicFilePath: true },
  });
  return result.messages.map((message) => {
    const [from, to] = message.range;
    let lo = 0;
    for (let hi = starts.length - 1; lo < hi;) {
      const mid = (lo + hi + 1) >> 1;
      if (starts[mid]! <= from) lo = mid;
      else hi = mid - 1;
    }
    const piece = pieces[lo]!;
    const [start, end] = piece.span ?? [from - starts[lo]!, Math.min(to - starts[lo]!, piece.text.length)];
    return { unit: piece.unit, start, end, encoding: piece.encoding, message: message.message.trim() };
  });
}

/** The name secretlint is told for a file: the rules tell `package.json` and `.npmrc` from the rest. */
function kindOf(path: string): string {
  if (path.endsWith("package.json") || path.endsWith("package-lock.json")) return "package.json";
  return path.endsWith(".npmrc") ? ".npmrc" : "changes";
}

/** What secretlint reads at once, at most: past it, the units gathered so far are scanned. */
const SCAN_BATCH_CHARS = 32 * 1024 * 1024;

/**
 * Units of text from many files, scanned together: secretlint runs once per kind of file (and per
 * SCAN_BATCH_CHARS), not once per file. Besides its cost per run, each run leaves marks in
 * secretlint's profiler that every later run walks again, so that a run per file of a large change
 * (or of a long-lived local runner) takes quadratic time.
 */
export class SecretScan<Owner> {
  private readonly batches = new Map<string, { units: string[]; owners: [Owner, number][]; chars: number }>();
  private readonly hits: { owner: Owner; hit: Hit }[] = [];

  /** Adds `units` of one owner (a file, or names), as a file called `filePath`. */
  async add(filePath: string, units: readonly string[], owner: Owner): Promise<void> {
    const kind = kindOf(filePath);
    let batch = this.batches.get(kind);
    if (!batch) this.batches.set(kind, (batch = { units: [], owners: [], chars: 0 }));
    units.forEach((text, unit) => {
      batch.units.push(text);
      batch.owners.push([owner, unit]);
      batch.chars += text.length + 1;
    });
    if (batch.chars > SCAN_BATCH_CHARS) await this.flush(kind);
  }

  private async flush(kind: string): Promise<void> {
    const batch = this.batches.get(kind);
    if (!batch) return;
    this.batches.delete(kind);
    for (const hit of await secretsInUnits(kind, batch.units)) {
      const [owner, unit] = batch.owners[hit.unit]!;
      this.hits.push({ owner, hit: { ...hit, unit } });
    }
  }

  /** Every secret found, each with its owner and its unit among the owner's. */
  async run(): Promise<{ owner: Owner; hit: Hit }[]> {
    for (const kind of [...this.batches.keys()]) await this.flush(kind);
    return this.hits;
  }
}

/** Lines of `next` that `previous` had not (as a multiset), with their line numbers in `next`. */
export function newLines(next: string, previous: string): { line: number; text: string }[] {
  const old = new Map<string, number>();
  if (previous) for (const text of previous.split(/\r?\n/)) old.set(text, (old.get(text) ?? 0) + 1);
  const added: { line: number; text: string }[] = [];
  next.split(/\r?\n/).forEach((text, i) => {
    const left = old.get(text) ?? 0;
    if (left > 0) old.set(text, left - 1);
    else if (text !== "") added.push({ line: i + 1, text });
  });
  return added;
}

/**
 * What the new version of a file adds to its old one (`previous`, null for a new file), as units to
 * scan, and where a secret found in a unit is, for a finding (`shown`: the file's name as it may be
 * shown).
 */
export function addedUnits(
  shown: string,
  next: Buffer,
  previous: Buffer | null,
): { units: string[]; where(hit: Hit): string } {
  const encoded = (hit: Hit) => (hit.encoding ? ` (${hit.encoding}-encoded)` : "");
  // `where` keeps numbers only: the units' text goes to the scan, which lets go of it once read.
  if (!next.includes(0)) {
    const lines = newLines(next.toString("utf8"), previous?.toString("utf8") ?? "");
    const numbers = lines.map((l) => l.line);
    return {
      units: lines.map((l) => l.text),
      where: (hit) => `${shown}:${numbers[hit.unit]}${encoded(hit)}`,
    };
  }
  const before = new Set(previous ? printableRuns(previous).map((r) => r.text) : []);
  const runs = printableRuns(next).filter((r) => !before.has(r.text));
  const places = runs.map((r) => [r.start, r.width] as const);
  return {
    units: runs.map((r) => r.text),
    where: (hit) => {
      const [start, width] = places[hit.unit]!;
      return `${shown} (binary, at byte ${start + hit.start * width})${encoded(hit)}`;
    },
  };
}
