import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { build } from "esbuild";
import { describe, expect, it } from "vitest";
// @ts-expect-error: a plain build script without type declarations
import { stableYamlParser } from "../../scripts/stable-yaml-parser.mjs";

type ParseEvents = (input: string, options: { filename?: string; maxDepth?: number }) => unknown[];

async function bundle(entry: string, outdir: string): Promise<string> {
  const outfile = join(outdir, "out.mjs");
  await build({
    entryPoints: [entry],
    outfile,
    bundle: true,
    platform: "node",
    format: "esm",
    logLevel: "silent",
    plugins: [stableYamlParser],
  });
  return outfile;
}

describe("the js-yaml build fix (parser state as a literal)", () => {
  it("bundles a parser that still honours both options", async () => {
    const dir = mkdtempSync(join(tmpdir(), "agentrelay-yaml-"));
    const entry = join(dir, "entry.mjs");
    writeFileSync(entry, 'export { parseEvents } from "js-yaml";\n');
    const out = await bundle(entry, dir);
    expect(readFileSync(out, "utf8")).toMatch(/const state = \{\s*filename: options\.filename \?\?/);
    const { parseEvents } = (await import(pathToFileURL(out).href)) as { parseEvents: ParseEvents };

    expect(parseEvents("a: [1, 2]\n", {}).length).toBeGreaterThan(4);
    expect(() => parseEvents("a: [1\n", { filename: "graph.yaml" })).toThrow(/graph\.yaml/);
    expect(() => parseEvents("a: [[[1]]]\n", { maxDepth: 2 })).toThrow(/depth/i);
    expect(() => parseEvents("a: [[[1]]]\n", { maxDepth: 10 })).not.toThrow();
  });

  it("fails the build when a js-yaml release no longer has the code it rewrites", async () => {
    const dir = mkdtempSync(join(tmpdir(), "agentrelay-yaml-"));
    mkdirSync(join(dir, "js-yaml", "dist"), { recursive: true });
    const changed = join(dir, "js-yaml", "dist", "js-yaml.mjs");
    writeFileSync(changed, "export function parseEvents(input, options) { return { ...options }; }\n");
    await expect(bundle(changed, dir)).rejects.toThrow(/found it 0 times/);
  });
});
