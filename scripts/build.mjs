// Transpiles the TypeScript sources into lib/ (one bundle per entry point) with esbuild.
// Type checking is `npm run typecheck`; this step only produces runnable JavaScript, in well under a second.
import { build } from "esbuild";

const entryPoints = { cli: "src/cli/main.ts", bench: "bench/main.ts", app: "src/app/main.ts" };

await build({
  entryPoints,
  outdir: "lib",
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  packages: "external",
  sourcemap: "linked",
  logLevel: "warning",
});
