// Transpiles the TypeScript sources into lib/ with esbuild: one file per entry point, and shared
// chunks for what the entries load on demand (each CLI command loads only its own modules).
// Type checking is `npm run typecheck`; this step only produces runnable JavaScript, in well under a second.
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
  packages: "external",
  sourcemap: "linked",
  logLevel: "warning",
});
