import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // Some tests run the real Claude Code CLI through whole graphs; none should come near this.
    testTimeout: 120_000,
    pool: "forks",
    // GitHub's workflow parser imports its JSON schemas without import attributes; let vite handle them.
    server: { deps: { inline: [/@actions\/(workflow-parser|expressions)/] } },
  },
});
