import { readFileSync } from "node:fs";
import { defineConfig, type Plugin } from "vitest/config";
import { HUNG_MS } from "./harness/patience.ts";

/** GitHub's workflow parser, which vite loads itself (see `inline` below). */
const WORKFLOW_PARSER = /\/node_modules\/@actions\/(workflow-parser|expressions)\//;

/**
 * The workflow parser's published source maps name TypeScript sources it does not publish: vite warns
 * once per file ("Sourcemap for ... points to missing source files", ninety-odd lines). Its files are
 * loaded here without their maps, which point nowhere anyway.
 */
const withoutDeadSourceMaps: Plugin = {
  name: "agentrelay:without-dead-source-maps",
  enforce: "pre",
  load(id) {
    if (!WORKFLOW_PARSER.test(id) || !id.endsWith(".js")) return null;
    return { code: readFileSync(id, "utf8").replace(/^\/\/# sourceMappingURL=.*$/m, ""), map: null };
  },
};

export default defineConfig({
  plugins: [withoutDeadSourceMaps],
  test: {
    include: ["test/**/*.test.ts"],
    // A limit catches a hang, and no more (harness/patience.ts): a busy machine only makes the tests slower.
    testTimeout: HUNG_MS,
    hookTimeout: HUNG_MS,
    pool: "forks",
    // A worker runs its files one after another with the modules they share loaded once, instead of
    // importing the app, Octokit and zod again for each file; what a file could leave behind for the
    // next (environment, clock, nock) is put back after it (test/support/worker-setup.ts).
    isolate: false,
    setupFiles: [
      "./test/support/worker-setup.ts",
      // AGENTRELAY_CPU_METER=FILE: each file's CPU-seconds, the forked processes' included, appended to FILE.
      ...(process.env.AGENTRELAY_CPU_METER ? ["./test/support/cpu-meter.ts"] : []),
    ],
    // Most test files wait on processes (Claude Code, git, loopback servers) far more than they
    // compute: four at a time keep two cores busy, where vitest's default (cores - 1) runs one. On a
    // quiet 2-core machine the suite took 265 s with four, about 300 s with three (docs/architecture.md).
    maxWorkers: 4,
    // The default reporter counts skipped tests; this one also says why.
    reporters: ["default", "./test/support/skip-reporter.ts"],
    // GitHub's workflow parser imports its JSON schemas without import attributes; let vite handle them.
    server: { deps: { inline: [WORKFLOW_PARSER] } },
  },
});
