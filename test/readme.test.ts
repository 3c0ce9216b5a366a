import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parseGraph } from "../src/graph/load.ts";
import { canonicalOrder } from "../src/plan/plan.ts";
import { REPO_ROOT } from "./support/fixtures.ts";

describe("README", () => {
  const readme = readFileSync(join(REPO_ROOT, "README.md"), "utf8");

  it("shows a graph example that is valid", () => {
    const example = /```yaml\n([\s\S]*?)```/.exec(readme)![1]!;
    const graph = parseGraph("README.md", example);
    expect(canonicalOrder(graph)).toEqual(["spec", "impl", "docs"]);
    expect(graph.tasks[2]!.primaryAgent.isolation.tokenTier).toBe("read_only");
  });

  it("names the test command that .ci/run runs", () => {
    expect(readme).toContain("npm ci && npm test");
    expect(readFileSync(join(REPO_ROOT, ".ci/run"), "utf8")).toContain("npm test");
  });
});
