#!/usr/bin/env node
// Thin entry: the CLI lives in src/cli and is built into lib/ by `npm ci` (the `prepare` script).
import { main } from "../lib/cli.js";

process.exitCode = await main(process.argv.slice(2));
