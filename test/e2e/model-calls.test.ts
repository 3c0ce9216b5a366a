/**
 * Every model call made through the credential proxy is charged (security case 71), not only Claude Code's turns: on the
 * end-to-end stand-in (the real app, the bundled Action, the real Claude Code CLI against a scripted
 * model), a task's completion gate calls `$ANTHROPIC_BASE_URL/v1/messages` five times with the
 * throwaway key (as a script the agent committed could). The task's attempt is charged every call the
 * model answered, the gate's five included; the verification that runs the same gate before the
 * integration PR merges has no agent, so no proxy, and its gate reaches no model.
 */
import { afterEach, describe, expect, it } from "vitest";
import { e2eAgent } from "../../harness/e2e-agent.ts";
import { type Standin, startStandin } from "../../harness/standin.ts";
import { usageMicros } from "../../src/attempt/model-meter.ts";

let standin: Standin | undefined;
afterEach(async () => {
  await standin?.close();
  standin = undefined;
});

const CALL = JSON.stringify({
  model: "claude-sonnet-4-5",
  max_tokens: 50,
  messages: [{ role: "user", content: "a call from the gate" }],
});
const GATE = `for i in 1 2 3 4 5; do curl -s -m 10 -H "x-api-key: $ANTHROPIC_API_KEY" -H 'content-type: application/json' -d '${CALL}' "$ANTHROPIC_BASE_URL/v1/messages" >/dev/null; done; true`;

describe("model calls a gate makes through the credential proxy", () => {
  it("are charged to the task's attempt; a verification's gate reaches no model", async () => {
    standin = await startStandin({ script: e2eAgent() });
    await standin.push({
      ".workflow/calls.yaml": `name: calls
workstreams:
  - id: ws
    auto_merge: true
tasks:
  - id: g
    workstream_id: ws
    description: writes a note; its gate calls the model five times
    completion_gate: ${JSON.stringify(GATE)}
`,
    });
    await standin.idle();
    const state = standin.gh.state("calls/1") as unknown as {
      outcome: string;
      tasks: { g: { attempts: { costMicros: number }[] } };
    };
    expect(state.outcome).toBe("succeeded");
    // The verification ran the gate too, before the integration PR merged.
    expect(standin.gh.checkRuns).toMatchObject([
      { name: "agentrelay / g", conclusion: "success" },
      { name: "agentrelay / verify-integration@ws", conclusion: "success" },
    ]);
    const requests = standin.modelRequests;
    const fromGate = requests.filter((r) => JSON.stringify(r.messages).includes("a call from the gate"));
    expect(fromGate).toHaveLength(5);
    // Every call the model answered (each says 100 tokens in, 20 out) is the attempt's.
    const answered = requests.reduce(
      (sum, r) => sum + usageMicros(r.model, { input_tokens: 100, output_tokens: 20 }),
      0,
    );
    expect(state.tasks.g.attempts).toHaveLength(1);
    expect(state.tasks.g.attempts[0]!.costMicros).toBe(Math.ceil(answered));
  }, 240_000);
});
