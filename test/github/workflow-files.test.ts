/**
 * Workflow files are read as untrusted text (security case 78): `doctor` and `init --no-app` read a
 * repository's workflows to find its CI, and a 300-byte file whose `on:` is a YAML alias bomb once
 * held them for good. They are read with the graph's loader, whose aliases are bounded: the file is
 * taken as broken at once, and the others are still read.
 */
import { describe, expect, it } from "vitest";
import { ciOn, parseWorkflow, SAMPLE_INTEGRATION_BRANCH } from "../../src/github/workflow-files.ts";

/** Ten levels of ten aliases each: 10^10 nodes once expanded, in about 300 bytes. */
function aliasBomb(): string {
  const lines = ["a0: &a0 [pull_request, pull_request]"];
  for (let i = 1; i <= 10; i++)
    lines.push(
      `a${i}: &a${i} [${Array(10)
        .fill(`*a${i - 1}`)
        .join(", ")}]`,
    );
  return `${lines.join("\n")}\nname: bomb\non: *a10\njobs:\n  test:\n    runs-on: ubuntu-latest\n`;
}

describe("a workflow file that is an alias bomb", () => {
  it("is read as broken at once, and the others are still read", () => {
    const ci = `name: ci\non:\n  pull_request:\njobs:\n  test:\n    runs-on: ubuntu-latest\n`;
    const started = Date.now();
    const files = [
      { path: ".github/workflows/bomb.yml", text: aliasBomb() },
      { path: ".github/workflows/ci.yml", text: ci },
    ].map(parseWorkflow);
    expect(files[0]).toMatchObject({ broken: true });
    expect(ciOn(files, SAMPLE_INTEGRATION_BRANCH).map((w) => w.name)).toEqual(["ci"]);
    // A time limit that catches a hang, not a measure.
    expect(Date.now() - started).toBeLessThan(30_000);
  });

  it("still reads a workflow whose bare `on:` YAML 1.1 takes as true", () => {
    const ci = parseWorkflow({ path: "ci.yml", text: "name: ci\non: [push, pull_request]\njobs: {}\n" });
    expect(Object.keys(ci.on)).toEqual(["push", "pull_request"]);
  });
});
