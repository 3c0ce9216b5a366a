// Transpiles the TypeScript sources into lib/ with esbuild: one file per entry point, and shared
// chunks for what the entries load on demand (each CLI command loads only its own modules).
// Type checking is `npm run typecheck`; this step only produces runnable JavaScript, in well under a second.
// The command line's start is most of what `agentrelay validate` takes (bench/cli-startup.ts), so
// what it loads is kept small: whitespace and syntax minified (names kept, for readable stacks), and
// the two small packages every command reads (js-yaml, fastest-levenshtein) inside its chunks
// rather than resolved and loaded as modules of their own. So are the ES module packages of the
// attempt process (local mode starts one per attempt): zod and secretlint are some 120 modules, whose
// resolving and loading one by one cost each attempt about 60 ms of CPU. Other packages stay in
// node_modules/: the CommonJS ones (proxy-chain, dns-packet) would need a `require` made for every
// chunk, and minijinja-js reads its WebAssembly file next to its own.
import { build } from "esbuild";

const entryPoints = { cli: "src/cli/main.ts", bench: "bench/main.ts", app: "src/app/main.ts" };

await build({
  entryPoints,
  outdir: "lib",
  bundle: true,
  platform: "node",
  format: "esm",
  splitting: true,
  chunkNames: "chunks/[name]-[hash]",
  target: "node20",
  minifyWhitespace: true,
  minifySyntax: true,
  plugins: [
    {
      name: "packages-outside-but-the-loaders",
      setup(build) {
        build.onResolve({ filter: /^[^./#]/ }, ({ path }) =>
          /^(js-yaml|fastest-levenshtein|zod|@secretlint\/[^/]+)(\/|$)/.test(path)
            ? undefined
            : { path, external: true },
        );
      },
    },
  ],
  sourcemap: "linked",
  logLevel: "warning",
});
