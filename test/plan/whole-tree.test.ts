/**
 * A whole-tree gate, or a clear word that there is none: the graph's `integration_gate` runs beside
 * each workstream's own; a workstream verified by its tasks' gates alone is said once, with the fix,
 * by `agentrelay plan`, the plan comment, the first status and `doctor`.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { planText } from "../../src/cli/commands/plan.ts";
import { graphNotes } from "../../src/cli/commands/doctor.ts";
import { createEngine } from "../../src/engine/engine.ts";
import { planSummary } from "../../src/github/render.ts";
import { statusComment } from "../../src/github/status-comment.ts";
import { buildPlan } from "../../src/plan/plan.ts";
import { resolverOf, unitGatesNote } from "../../src/plan/resolution.ts";
import { graphOf, graphYaml } from "../support/graphs.ts";

const tasks = [
  { id: "a", ws: "left", extra: "completion_gate: npm run unit" },
  { id: "b", ws: "right", extra: "completion_gate: npm run unit" },
];
const workstreams = (rightGate = "") => [
  { id: "left", autoMerge: true },
  { id: "right", autoMerge: true, ...(rightGate ? { extra: `integration_gate: ${rightGate}` } : {}) },
];
const FIX = "add a graph-wide `integration_gate` (your end-to-end check), or one per workstream";

describe("the graph's integration_gate", () => {
  it("runs beside each workstream's own gates, once", () => {
    const plan = buildPlan(graphOf(tasks, workstreams("npm run e2e"), "integration_gate: npm run e2e"));
    expect(resolverOf(plan, { workstream: "left" }).gates).toEqual(["npm run unit", "npm run e2e"]);
    expect(resolverOf(plan, { workstream: "right" }).gates).toEqual(["npm run e2e"]);
    // A task PR's resolution keeps its task's gate.
    expect(resolverOf(plan, { workstream: "left", task: "a" }).gates).toEqual(["npm run unit"]);
    expect(unitGatesNote(plan)).toBeNull();
  });

  it("without it, the workstreams with unit gates alone are named once, with the fix", () => {
    const plan = buildPlan(graphOf(tasks, workstreams("npm run e2e")));
    const note = `workstream \`left\` is verified before landing by its tasks' gates alone, so a break only a whole-tree check shows can land: ${FIX}`;
    expect(unitGatesNote(plan)).toBe(note);
    expect(planText(plan).split(note)).toHaveLength(2);
    expect(planSummary(plan).split(note)).toHaveLength(2);
    expect(unitGatesNote(buildPlan(graphOf(tasks, workstreams())))).toMatch(
      /^every workstream are verified|^every workstream/,
    );
    // No gates at all, or verification off: nothing is claimed verified, nothing to say.
    expect(unitGatesNote(buildPlan(graphOf([{ id: "a" }])))).toBeNull();
    expect(unitGatesNote(buildPlan(graphOf(tasks, workstreams(), "verify_integration: false")))).toBeNull();
  });

  it("the first status says it, until an integration PR opens", () => {
    const engine = createEngine(graphOf(tasks, workstreams()));
    const { state } = engine.start(0);
    expect(statusComment(engine.plan, state, 0)).toContain(FIX);
    state.workstreams.left!.integration = "open";
    expect(statusComment(engine.plan, state, 0)).not.toContain(FIX);
  });

  it("doctor says it of each graph under .workflow/ that needs it", () => {
    const dir = mkdtempSync(join(tmpdir(), "agentrelay-doctor-graphs-"));
    mkdirSync(join(dir, ".workflow"));
    writeFileSync(join(dir, ".workflow", "unit.yaml"), graphYaml(tasks, workstreams()));
    writeFileSync(
      join(dir, ".workflow", "whole.yaml"),
      graphYaml(tasks, workstreams(), "integration_gate: npm run e2e"),
    );
    writeFileSync(join(dir, ".workflow", "broken.yaml"), "name: [\n");
    expect(graphNotes(dir)).toEqual([
      expect.stringMatching(/^\.workflow\/unit\.yaml: every workstream is verified/),
    ]);
    expect(graphNotes(join(dir, "nowhere"))).toEqual([]);
  });
});
