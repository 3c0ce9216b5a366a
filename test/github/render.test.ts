import { describe, expect, it } from "vitest";
import { agentText, BODY_LIMIT, statusComment } from "../../src/github/render.ts";
import { createEngine } from "../../src/engine/engine.ts";
import { buildPlan } from "../../src/plan/plan.ts";
import { parseGraph } from "../../src/graph/load.ts";
import { generateGraph } from "../../bench/graph-scale.ts";

describe("text people read on GitHub", () => {
  it("keeps what an agent wrote from leaking secrets, hiding text, breaking the page or pinging people", () => {
    const text = agentText(
      `done <!-- hidden --> \`\`\`x\`\`\` ghs_${"a".repeat(36)} cc @octocat and @org/team`,
    );
    expect(text).toBe("done  hidden  ʼʼʼxʼʼʼ *** cc @\u200boctocat and @\u200borg/team");
    expect(agentText("x".repeat(50), 10)).toBe(`${"x".repeat(10)} …`);
  });

  it("fits the status of a 10,000-task run into one comment", () => {
    const graph = parseGraph("big.yaml", generateGraph(10_000), { limits: { maxBytes: 64 << 20 } });
    const engine = createEngine(graph);
    const body = statusComment(buildPlan(graph), engine.start(0).state, 0);
    expect(body.length).toBeLessThanOrEqual(BODY_LIMIT);
    expect(body).toMatch(
      /… and \d+ more tasks \(the full state is on the `agentrelay-state\/scale-10000` branch\)/,
    );
  });
});
