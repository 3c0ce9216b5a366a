import { describe, expect, it } from "vitest";
import type { GraphError } from "../../src/graph/errors.ts";
import { loadYaml } from "../../src/graph/yaml.ts";

const load = (text: string) => loadYaml("f.yaml", text);
const failure = (text: string, limits?: Parameters<typeof loadYaml>[2]) => {
  try {
    loadYaml("f.yaml", text, limits);
  } catch (error) {
    return (error as GraphError).message;
  }
  return "no error";
};

describe("safe YAML loading", () => {
  it("resolves scalars as PyYAML's safe_load does (YAML 1.1 booleans, but y/n stay strings)", () => {
    expect(
      load("a: yes\nb: Off\nc: n\nd: '10'\ne: 10\nf: 0x1f\ng: ~\nh: 2024-01-01\ni: 1.5\n").value,
    ).toEqual({
      a: true,
      b: false,
      c: "n",
      d: "10",
      e: 10,
      f: 31,
      g: null,
      h: "2024-01-01",
      i: 1.5,
    });
  });

  it("applies merge keys, with explicit keys winning", () => {
    expect(load("base: &b {x: 1, y: 2}\nt:\n  <<: *b\n  y: 3\n").value).toEqual({
      base: { x: 1, y: 2 },
      t: { x: 1, y: 3 },
    });
  });

  it("keeps collections at the same depth apart (the loader reuses its buffers per depth)", () => {
    const yaml = load(
      [
        "long: [1, 2, 3, [4, 5, 6]]",
        "short: [7, [8]]",
        "empty: []",
        "first: {x: 1, y: 2, z: 3}",
        "second: {z: 4}",
        "alias: &s [a, b]",
        "again: *s",
        "",
      ].join("\n"),
    );
    const value = yaml.value as Record<string, unknown>;
    expect(value).toEqual({
      long: [1, 2, 3, [4, 5, 6]],
      short: [7, [8]],
      empty: [],
      first: { x: 1, y: 2, z: 3 },
      second: { z: 4 },
      alias: ["a", "b"],
      again: ["a", "b"],
    });
    expect(value.again).toBe(value.alias);
    expect(yaml.keyOrder(["second"])).toEqual(["z"]);
    expect(yaml.locate(["short", 1, 0])).toEqual({ line: 2, column: 13 });
    // A key of the earlier, longer mapping is no duplicate in the later one; a real duplicate still is.
    expect(failure("- {x: 1, y: 2}\n- {y: 3, x: 4}\n")).toBe("no error");
    expect(failure("- {x: 1, y: 2}\n- {y: 3, y: 4}\n")).toBe("f.yaml:2:10: duplicate key 'y'");
  });

  it("finds duplicate keys in large mappings too (looked up, not scanned, past a few keys)", () => {
    const keys = (from: number, to: number) =>
      Array.from({ length: to - from }, (_, i) => `k${from + i}: ${from + i}`).join(", ");
    const large = load(`- {${keys(0, 40)}}\n- {${keys(0, 3)}}\n`).value as Record<string, number>[];
    expect(Object.keys(large[0]!)).toHaveLength(40);
    expect(large[1]).toEqual({ k0: 0, k1: 1, k2: 2 });
    expect(failure(`a: {${keys(0, 40)}, k3: again}\n`)).toMatch(/^f\.yaml:1:\d+: duplicate key 'k3'$/);
    expect(failure(`a: {${keys(0, 40)}, k30: again}\n`)).toMatch(/^f\.yaml:1:\d+: duplicate key 'k30'$/);
    const merged = load(`base: &b {${keys(0, 30)}}\nt:\n  <<: *b\n  k29: own\n`).value as {
      t: Record<string, unknown>;
    };
    expect(Object.keys(merged.t)).toHaveLength(30);
    expect(merged.t.k29).toBe("own");
  });

  it("keeps __proto__ as an own key without touching the prototype", () => {
    const value = load("__proto__:\n  polluted: 1\n").value as Record<string, unknown>;
    expect(Object.keys(value)).toEqual(["__proto__"]);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.getPrototypeOf(value)).toBe(Object.prototype);
  });

  it("keeps the written order of numeric keys", () => {
    const yaml = load("steps:\n  '2': a\n  '1': b\n  x: c\n");
    const steps = (yaml.value as { steps: object }).steps;
    expect(Object.keys(steps)).toEqual(["1", "2", "x"]); // what plain JS objects do
    expect(yaml.keyOrder(["steps"])).toEqual(["2", "1", "x"]); // what the file says
  });

  it("locates nodes, keys, and missing fields at their nearest ancestor", () => {
    const yaml = load("tasks:\n  - id: a\n    dependencies: [b, c]\n");
    expect(yaml.locate(["tasks", 0, "dependencies", 1])).toEqual({ line: 3, column: 23 });
    expect(yaml.locate(["tasks", 0, "dependencies"], "key")).toEqual({ line: 3, column: 5 });
    expect(yaml.locate(["tasks", 0, "missing", "deeper"])).toEqual({ line: 2, column: 5 });
  });

  it("refuses files over the byte limit before parsing", () => {
    expect(failure("a: 1234567890\n", { maxBytes: 8, maxExpandedNodes: 100, maxDepth: 10 })).toBe(
      "f.yaml:1:1: file is 14 bytes, larger than the limit of 8 bytes",
    );
  });

  it("refuses deep nesting", () => {
    expect(failure(`${"[".repeat(100)}${"]".repeat(100)}`)).toMatch(/^f\.yaml:1:\d+: invalid YAML: /);
  });

  it("rejects unknown aliases, complex keys and unknown tags", () => {
    expect(failure("a: *nope\n")).toBe("f.yaml:1:4: unknown alias '*nope'");
    expect(failure("? [a]\n: 1\n")).toMatch(/mapping keys must be plain scalars/);
    expect(failure("a: !<tag:yaml.org,2002:js/function> 'x'\n")).toMatch(/unsupported YAML tag/);
  });

  it("rejects an empty file", () => {
    expect(failure("# only a comment\n")).toBe("f.yaml:1:1: the file is empty");
  });
});
