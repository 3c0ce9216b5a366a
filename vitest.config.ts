import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // Some tests run the real Claude Code CLI through whole graphs; none should come near this.
    testTimeout: 120_000,
    pool: "forks",
  },
});
