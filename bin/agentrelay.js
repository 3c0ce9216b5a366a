#!/usr/bin/env node
// Thin entry: the CLI lives in src/cli. `npm ci` builds it into lib/ (the `prepare` script), which is
// what development runs; a clone where nothing was installed runs the bundle committed in dist/cli/.
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

const built = "../lib/cli.js";
const { main } = await import(
  existsSync(fileURLToPath(import.meta.resolve(built))) ? built : "../dist/cli/index.js"
);

process.exitCode = await main(process.argv.slice(2));
