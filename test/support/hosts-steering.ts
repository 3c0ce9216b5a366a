/**
 * An agent that rewrites /etc/hosts and /etc/resolv.conf to steer the egress proxy, run inside a
 * mount and network namespace made for it (egress-resolver.test.ts starts it through unshare), so
 * that the machine's own files and network are never touched. The namespace has loopback and one more
 * address, 192.0.2.10, which stands for an allowed host out there; a DNS server on 127.0.0.1 answers
 * for it. The runner starts the proxy; then the agent points the allowed name at 127.0.0.1 (where a
 * collector listens on the same port) and the name servers at its own; then requests go through the
 * proxy. It prints, as JSON, who answered each request.
 */
import { execFileSync } from "node:child_process";
import { createSocket } from "node:dgram";
import { mkdtempSync, writeFileSync } from "node:fs";
import { createServer, request } from "node:http";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as dnsPacket from "dns-packet";
import { startEgressProxy } from "../../src/attempt/egress/proxy.ts";
import { snapshotResolver } from "../../src/attempt/egress/resolver.ts";

/** A DNS server on `address`:53 that answers A queries from `table`. */
async function dnsServer(address: string, table: Record<string, string>) {
  const udp = createSocket("udp4");
  udp.on("message", (message, peer) => {
    const query = dnsPacket.decode(message);
    const question = query.questions?.[0];
    const found = question?.type === "A" ? table[question.name] : undefined;
    const answer = dnsPacket.encode({
      type: "response",
      id: query.id ?? 0,
      flags: dnsPacket.RECURSION_AVAILABLE | (found ? 0 : 3),
      questions: query.questions ?? [],
      answers: found ? [{ type: "A", name: question!.name, ttl: 60, data: found }] : [],
    });
    udp.send(answer, peer.port, peer.address);
  });
  await new Promise<void>((resolve) => udp.bind(53, address, resolve));
  return udp;
}

const listen = (server: ReturnType<typeof createServer>, port: number, host: string) =>
  new Promise<number>((resolve) =>
    server.listen(port, host, () => resolve((server.address() as { port: number }).port)),
  );

const dir = mkdtempSync(join(tmpdir(), "agentrelay-hosts-"));
const file = (name: string, text: string) => {
  writeFileSync(join(dir, name), text);
  return join(dir, name);
};
// The machine as it is when the runner starts: its hosts file and its name server.
execFileSync("mount", ["--bind", file("hosts", "127.0.0.1 localhost\n"), "/etc/hosts"]);
execFileSync("mount", ["--bind", file("resolv.conf", "nameserver 127.0.0.1\n"), "/etc/resolv.conf"]);
const dns = await dnsServer("127.0.0.1", {
  "allowed.example": "192.0.2.10",
  "metadata.allowed.example": "169.254.169.254",
  "loop.allowed.example": "127.0.0.1",
});
// The agent's own name server, which it will name in resolv.conf.
const agentDns = await dnsServer("127.0.0.2", { "allowed.example": "127.0.0.1" });

const target = createServer((_req, res) => res.end("target"));
const port = await listen(target, 0, "192.0.2.10");
const collector = createServer((_req, res) => res.end("collector"));
await listen(collector, port, "127.0.0.1");

const refused: string[] = [];
const proxy = await startEgressProxy(
  ["allowed.example", "*.allowed.example"],
  (host, at, why) => refused.push(`${host}:${at}${why ? ` (${why})` : ""}`),
  snapshotResolver(),
);

// The agent (root in its container) rewrites both files.
writeFileSync("/etc/hosts", "127.0.0.1 localhost\n127.0.0.1 allowed.example\n");
writeFileSync("/etc/resolv.conf", "nameserver 127.0.0.2\n");

/** A plain HTTP request through the proxy: who answered, or the proxy's status. */
const forwarded = (host: string) =>
  new Promise<string>((resolve) => {
    const req = request(
      {
        host: "127.0.0.1",
        port: proxy.port,
        path: `http://${host}:${port}/`,
        headers: { host: `${host}:${port}` },
      },
      (res) => {
        let body = "";
        res.on("data", (chunk) => (body += chunk));
        res.on("end", () => resolve(`${res.statusCode} ${body}`));
      },
    );
    req.on("error", (error) => resolve(`error ${error.message}`));
    req.setTimeout(10_000, () => req.destroy(new Error("timeout")));
    req.end();
  });

/** A CONNECT tunnel through the proxy, then a request in it: who answered. */
const tunnelled = (host: string) =>
  new Promise<string>((resolve) => {
    const socket = connect(proxy.port, "127.0.0.1");
    let text = "";
    socket.on("data", (chunk) => {
      text += chunk;
      if (/^HTTP\/1\.1 200/.test(text) && !text.includes("GET-SENT")) {
        text += "GET-SENT";
        socket.write(`GET / HTTP/1.1\r\nhost: ${host}\r\nconnection: close\r\n\r\n`);
      }
    });
    socket.on("close", () => resolve(/(target|collector)$/.exec(text)?.[1] ?? text.split("\r\n")[0]!));
    socket.on("error", () => resolve("error"));
    socket.write(`CONNECT ${host}:${port} HTTP/1.1\r\nhost: ${host}:${port}\r\n\r\n`);
    setTimeout(() => socket.destroy(), 10_000);
  });

const seen = {
  forwarded: await forwarded("allowed.example"),
  tunnelled: await tunnelled("allowed.example"),
  metadata: await forwarded("metadata.allowed.example"),
  loopback: await forwarded("loop.allowed.example"),
  refused,
};
await proxy.close();
for (const server of [target, collector]) {
  server.closeAllConnections();
  server.close();
}
dns.close();
agentDns.close();
process.stdout.write(JSON.stringify(seen));
// Pipes are written synchronously on Linux; what is left (idle keep-alive sockets) need not be waited for.
process.exit(0);
