#!/usr/bin/env node
import { main } from "../lib/bench.js";

process.exitCode = await main(process.argv.slice(2));
