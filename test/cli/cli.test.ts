import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { REPO_ROOT } from "../support/fixtures.ts";
import { graphYaml } from "../support/graphs.ts";

/** Runs the real binary, as users and other tools do. */
function agentrelay(...args: string[]) {
  const result = spawnSync(process.execPath, [join(REPO_ROOT, "bin/agentrelay.js"), ...args], {
    encoding: "utf8",
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

const dir = mkdtempSync(join(tmpdir(), "agentrelay-cli-"));
const write = (name: string, text: string) => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};
const good = write("good.yaml", graphYaml([{ id: "a" }, { id: "b", deps: ["a"] }]));
const bad = write(
  "bad.yaml",
  "name: g\ntasks:\n  - id: a\n    dependencies: [zz]\n    description: x\n  - id: b\n",
);

describe("agentrelay validate", () => {
  it("exits 0 when every file is valid", () => {
    expect(agentrelay("validate", good).code).toBe(0);
  });

  it("exits 1 and prints one FILE:LINE:COL: message line per error", () => {
    const { code, stdout } = agentrelay("validate", good, bad);
    expect(code).toBe(1);
    expect(stdout.trim().split("\n")).toEqual([
      `${bad}:4:20: tasks[0].dependencies[0]: unknown dependency id 'zz'`,
    ]);
  });

  it("exits 2 on a usage error", () => {
    expect(agentrelay("validate").code).toBe(2);
    expect(agentrelay("frobnicate").code).toBe(2);
  });
});

describe("agentrelay plan", () => {
  it("prints the plan as one JSON object with --json", () => {
    const { code, stdout } = agentrelay("plan", good, "--json");
    expect(code).toBe(0);
    expect(JSON.parse(stdout)).toEqual({
      name: "g",
      dialect: "agentrelay",
      order: ["a", "b"],
      waves: [["a"], ["b"]],
      workstreams: [{ id: "default", tasks: ["a", "b"] }],
    });
  });

  it("prints a readable plan with a mermaid diagram", () => {
    const { stdout } = agentrelay("plan", good);
    expect(stdout).toContain("1. a  [default]");
    expect(stdout).toContain("```mermaid\nflowchart TD");
    expect(stdout).toContain("t0 --> t1");
  });

  it("reports errors like validate", () => {
    expect(agentrelay("plan", bad).code).toBe(1);
  });
});

describe("agentrelay render", () => {
  it("writes the three protocol files", () => {
    const out = join(dir, "render");
    const { code } = agentrelay("render", good, "b", "--attempt", "2", "--out", out);
    expect(code).toBe(0);
    expect(JSON.parse(readFileSync(join(out, "manifest.json"), "utf8")).execution).toEqual({
      attempt_num: 1,
      graph_name: "g",
    });
    expect(JSON.parse(readFileSync(join(out, "policies.json"), "utf8")).schema_version).toBe("1");
    expect(readFileSync(join(out, "instructions.md"), "utf8")).toContain("## Previous Attempts");
  });

  it("names a missing required cyberian param at its declaration", () => {
    const workflow = write(
      "w.yaml",
      "name: w\nparams:\n  topic: {range: string, required: true}\nsubtasks:\n  s:\n    instructions: 'Study {{ topic }}'\n",
    );
    const missing = agentrelay("render", workflow, "s", "--out", join(dir, "w"));
    expect(missing.code).toBe(1);
    expect(missing.stdout).toContain(`${workflow}:3:3: params.topic: required param 'topic' has no value`);
    expect(agentrelay("render", workflow, "s", "--out", join(dir, "w"), "--param", "topic=owls").code).toBe(
      0,
    );
    expect(readFileSync(join(dir, "w", "instructions.md"), "utf8")).toContain("Study owls");
  });

  it("refuses an unknown task", () => {
    expect(agentrelay("render", good, "nope").code).toBe(2);
  });
});

describe("agentrelay schema", () => {
  it("prints the committed JSON Schema", () => {
    const printed = execFileSync(process.execPath, [join(REPO_ROOT, "bin/agentrelay.js"), "schema"], {
      encoding: "utf8",
    });
    expect(JSON.parse(printed)).toEqual(
      JSON.parse(readFileSync(join(REPO_ROOT, "schema/agentrelay-graph.schema.json"), "utf8")),
    );
  });
});
