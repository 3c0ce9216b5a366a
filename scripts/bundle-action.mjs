// Bundles what runs without installing anything, committed: dist/action/ is the task Action
// (action.yml), dist/orchestrate/ the orchestrator of workflow-only mode (orchestrate/action.yml), both
// run by GitHub; dist/cli/ is the command line a clone runs (bin/agentrelay.js, when `npm ci` has not
// built lib/). Each is one ESM file with every dependency inside, plus minijinja's WebAssembly module
// beside it.
//   node scripts/bundle-action.mjs [OUTDIR]
import { copyFileSync, mkdirSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { build } from "esbuild";

const outdir = process.argv[2] ?? "dist";
const require = createRequire(import.meta.url);
const ENTRIES = {
  action: "src/action/index.ts",
  orchestrate: "src/app/orchestrate.ts",
  cli: "src/cli/main.ts",
};
const wasm = join(dirname(require.resolve("minijinja-js")), "minijinja_js_bg.wasm");
for (const [name, entry] of Object.entries(ENTRIES)) {
  mkdirSync(join(outdir, name), { recursive: true });
  await build({
    entryPoints: [entry],
    outfile: join(outdir, name, "index.js"),
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    minify: true,
    legalComments: "none",
    logLevel: "warning",
    // CommonJS dependencies inside an ES module need require and __dirname.
    banner: {
      js: [
        'import { createRequire as __agentrelayRequire } from "node:module";',
        'import { fileURLToPath as __agentrelayPath } from "node:url";',
        "const require = __agentrelayRequire(import.meta.url);",
        "const __dirname = __agentrelayPath(new URL('.', import.meta.url));",
      ].join("\n"),
    },
  });
  copyFileSync(wasm, join(outdir, name, "minijinja_js_bg.wasm"));
}
