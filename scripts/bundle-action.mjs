// Bundles the task Action into dist/action/ (committed, as GitHub runs it without installing
// anything): one ESM file with every dependency inside, plus minijinja's WebAssembly module.
//   node scripts/bundle-action.mjs [OUTDIR]
import { copyFileSync, mkdirSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { build } from "esbuild";

const outdir = process.argv[2] ?? "dist/action";
const require = createRequire(import.meta.url);
mkdirSync(outdir, { recursive: true });
await build({
  entryPoints: ["src/action/index.ts"],
  outfile: join(outdir, "index.js"),
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
const wasm = join(dirname(require.resolve("minijinja-js")), "minijinja_js_bg.wasm");
copyFileSync(wasm, join(outdir, "minijinja_js_bg.wasm"));
