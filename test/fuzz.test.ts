/**
 * A bounded fuzz test of every entry that reads untrusted graph files: thousands of mutated and
 * hostile graphs made from real ones (the repository's examples, the rule cases, and the agentrelay
 * and cyberian fixtures when present). Each `validate`, `plan` and `render` must end with exit 0, 1
 * or 2 and, on 1, located one-line errors: never a stack trace, a hang or another exit code. The
 * app's push handler is fed a share of them and must never answer 500. Seeded, so a failure repeats.
 */
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { main } from "../src/cli/main.ts";
import { type Harness, startApp } from "../harness/app.ts";
import { fixture, hasFixtures, REPO_ROOT, yamlFiles } from "./support/fixtures.ts";
import { RULE_CASES } from "./graph/rules.cases.ts";

const SEEDS: string[] = [
  readFileSync(join(REPO_ROOT, "examples/demo.yaml"), "utf8"),
  ...RULE_CASES.map((c) => c.yaml),
  ...(hasFixtures
    ? [
        ...yamlFiles("agentrelay", "graphs").map((f) =>
          readFileSync(fixture("agentrelay", "graphs", f), "utf8"),
        ),
        ...yamlFiles("cyberian").map((f) => readFileSync(fixture("cyberian", f), "utf8")),
      ]
    : []),
];

/** Values a hostile or careless author puts where a scalar goes. */
const HOSTILE = [
  "",
  "~",
  "null",
  "[]",
  "{}",
  "yes",
  "0x1F",
  "1e309",
  "-1",
  "'  padded  '",
  `"${"x".repeat(300)}"`,
  `"${"y".repeat(70_000)}"`,
  '"a\\nb"',
  '"c\\u202ed"',
  '"n\\0x"',
  '"../../../etc/passwd"',
  '"/abs/path"',
  "*nope",
  "&a x",
  "!!binary aGVsbG8=",
  "!<tag:yaml.org,2002:js/function> 'function(){}'",
  '"{{ undefined_thing }}"',
  "\"{{ 'x' * 1000000000 }}\"",
  '"{% for i in range(100000) %}{% for j in range(100) %}{% endfor %}{% endfor %}"',
  '"{{ "',
  "[a, [b, [c, [d]]]]",
  "{a: {b: {c: {d: e}}}}",
];

type Mutation = (lines: string[], r: (n: number) => number) => string[];
const MUTATIONS: Mutation[] = [
  (l, r) => l.filter((_, i) => i !== r(l.length)), // drop a line
  (l, r) => {
    const i = r(l.length);
    return [...l.slice(0, i + 1), l[i] ?? "", ...l.slice(i + 1)]; // repeat a line (duplicate keys)
  },
  (l, r) => {
    const i = r(l.length);
    const j = r(l.length);
    const out = [...l];
    [out[i], out[j]] = [out[j] ?? "", out[i] ?? ""];
    return out; // swap two lines
  },
  (l, r) => l.map((line, i) => (i === r(l.length) ? ` ${line}` : line)), // break indentation
  (l, r) =>
    l.map((line, i) =>
      i === r(l.length) && line.includes(":")
        ? `${line.slice(0, line.indexOf(":") + 1)} ${HOSTILE[r(HOSTILE.length)]}`
        : line,
    ), // a hostile value
  (l, r) => l.slice(0, r(l.length + 1)), // cut short
  (l, r) => l.map((line, i) => (i === r(l.length) ? line.replace(/[a-z]/, "Z") : line)), // a typo
  (l, r) => [...l.slice(0, r(l.length)), String.fromCharCode(r(0x3000)), ...l], // a stray character
];

const mutants = fc.tuple(
  fc.nat({ max: SEEDS.length - 1 }),
  fc.array(fc.tuple(fc.nat({ max: MUTATIONS.length - 1 }), fc.infiniteStream(fc.nat())), {
    minLength: 1,
    maxLength: 4,
  }),
);

function mutate([seed, steps]: [number, [number, fc.Stream<number>][]]): string {
  let lines = SEEDS[seed]!.split("\n");
  for (const [m, stream] of steps) {
    const numbers = stream[Symbol.iterator]();
    lines = MUTATIONS[m]!(lines, (n) => (n <= 0 ? 0 : numbers.next().value! % n));
  }
  return lines.join("\n");
}

const dir = mkdtempSync(join(tmpdir(), "agentrelay-fuzz-"));
let cases = 0;

/** Runs the CLI in this process, as the binary does, and checks what a user would see. */
async function cli(args: string[], file: string): Promise<void> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(args, { out: (t) => out.push(t), err: (t) => err.push(t) });
  expect([0, 1, 2]).toContain(code);
  const lines = [...out, ...err].join("\n").split("\n").filter(Boolean);
  for (const line of lines) expect(line, line).not.toMatch(/^\s+at |Error:|TypeError|RangeError/);
  if (code === 1 && args[0] === "validate")
    for (const line of out.join("\n").split("\n").filter(Boolean))
      expect(line).toMatch(new RegExp(`^${file.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}:\\d+:\\d+: `));
}

describe("fuzzed graph files", () => {
  it("validate, plan and render end in a clear answer, never a stack trace", async () => {
    await fc.assert(
      fc.asyncProperty(mutants, fc.nat(), async (mutant, which) => {
        const text = mutate(mutant);
        const file = join(dir, `g${cases++ % 50}.yaml`);
        writeFileSync(file, text);
        await cli(["validate", file], file);
        await cli(["plan", file, "--json"], file);
        const task = /^\s*-?\s*id:\s*(\S+)\s*$/m.exec(text)?.[1] ?? "nothing";
        await cli(["render", file, which % 3 === 0 ? "nope" : task, "--out", join(dir, "out")], file);
      }),
      { numRuns: 2_500, seed: 20261123, endOnFailure: true },
    );
    expect(cases).toBeGreaterThanOrEqual(2_500);
  });
});

describe("the app's push handler, fed fuzzed graphs", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startApp();
  });
  afterAll(() => h.close());

  it("never answers 500", async () => {
    await fc.assert(
      fc.asyncProperty(mutants, async (mutant) => {
        const status = await h
          .pushGraph(`.workflow/f${cases++ % 20}.yaml`, mutate(mutant))
          .then(() => 200)
          .catch((error: Error) => Number(/answered (\d+)/.exec(error.message)?.[1] ?? 0));
        expect(status).not.toBe(500);
        expect(status).toBe(200);
      }),
      { numRuns: 150, seed: 20261124, endOnFailure: true },
    );
  });
});
