/**
 * The credential proxy on its own: it forwards the model API's calls, with the real credential, to
 * the upstream fixed when it started and nowhere else, whatever the request names; and a request the
 * upstream leaves unanswered ends within the silence deadline, while a slow stream that keeps sending
 * is left alone.
 */
import { createServer, type IncomingHttpHeaders, request, type Server } from "node:http";
import { type AddressInfo, connect } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { type CredentialProxy, startCredentialProxy } from "../../src/attempt/credential-proxy.ts";
import type { Trouble } from "../../src/attempt/network.ts";
import { until } from "../../harness/patience.ts";

const REAL = "sk-ant-real-credential";
const servers: Server[] = [];
let proxy: CredentialProxy | undefined;
afterEach(async () => {
  await proxy?.close();
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    server.close();
  }
  proxy = undefined;
});

/** A loopback server that records what it hears and answers with `answer`. */
async function recorder(answer: (res: import("node:http").ServerResponse) => void = (res) => res.end("ok")) {
  const heard: { method?: string; url?: string; headers: IncomingHttpHeaders }[] = [];
  const server = createServer((req, res) => {
    heard.push({ method: req.method, url: req.url, headers: req.headers });
    req.resume();
    answer(res);
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { heard, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

/** A request written on a raw socket (any request line), and the whole answer. */
function raw(url: string, text: string): Promise<string> {
  const { port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect(Number(port), "127.0.0.1");
    let answer = "";
    socket.on("data", (chunk) => (answer += chunk));
    socket.on("close", () => resolve(answer));
    socket.on("error", () => resolve(answer));
    socket.write(text);
    setTimeout(() => socket.end(), 1_000);
  });
}

describe("the credential proxy's requests", () => {
  it("forwards the model API's calls to its upstream only, whatever the request names", async () => {
    const upstream = await recorder((res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ model: "claude-sonnet-4-5", usage: { input_tokens: 1, output_tokens: 1 } }));
    });
    const collector = await recorder();
    proxy = await startCredentialProxy({ kind: "api_key", key: REAL }, { upstream: upstream.url });
    const elsewhere = new URL(collector.url).host;
    const line = (target: string, method = "GET") =>
      `${method} ${target} HTTP/1.1\r\nhost: x\r\nx-api-key: ${proxy!.key}\r\nconnection: close\r\n\r\n`;

    const protocolRelative = await raw(proxy.url, line(`//${elsewhere}/x`));
    const absolute = await raw(proxy.url, line(`http://${elsewhere}/x`));
    const backslash = await raw(proxy.url, line(`/\\${elsewhere}/x`));
    const tunnel = await raw(proxy.url, `CONNECT ${elsewhere} HTTP/1.1\r\nhost: ${elsewhere}\r\n\r\n`);
    const files = await raw(proxy.url, line("/v1/files"));
    const dotted = await raw(proxy.url, line("/v1/messages/../../x", "POST"));
    for (const answer of [protocolRelative, absolute, backslash, tunnel])
      expect(answer).toMatch(/^HTTP\/1\.1 400 [\s\S]*"invalid_request_error"/);
    expect(protocolRelative).toContain(
      `the request target \\"//${elsewhere}/x\\" is not a path of the model API`,
    );
    expect(files).toMatch(/^HTTP\/1\.1 404 [\s\S]*GET \\"\/v1\/files\\" is not a call of the model API/);
    expect(dotted).toMatch(/^HTTP\/1\.1 404 /);
    expect(collector.heard).toEqual([]);
    expect(upstream.heard).toEqual([]);

    // The calls Claude Code makes go upstream, path and query kept, with the real credential.
    const answer = await raw(
      proxy.url,
      `POST /v1/messages?beta=true HTTP/1.1\r\nhost: x\r\nx-api-key: ${proxy.key}\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}`,
    );
    expect(answer).toMatch(/^HTTP\/1\.1 200 [\s\S]*"usage"/);
    expect(upstream.heard).toMatchObject([
      { method: "POST", url: "/v1/messages?beta=true", headers: { "x-api-key": REAL } },
    ]);
    expect(upstream.heard[0]!.headers.host).toBe(new URL(upstream.url).host);
  });

  it("keeps an upstream's base path, and a request cannot climb out of it", async () => {
    const upstream = await recorder();
    proxy = await startCredentialProxy(
      { kind: "oauth_token", token: "sk-ant-oat01-real" },
      { upstream: `${upstream.url}/gateway/anthropic/` },
    );
    const send = (target: string) =>
      raw(
        proxy!.url,
        `GET ${target} HTTP/1.1\r\nhost: x\r\nx-api-key: ${proxy!.key}\r\nconnection: close\r\n\r\n`,
      );
    expect(await send("/v1/models/claude-haiku-4-5")).toMatch(/^HTTP\/1\.1 200 /);
    expect(await send("/v1/models/..%2f..%2fadmin")).toMatch(/^HTTP\/1\.1 404 /);
    expect(upstream.heard).toMatchObject([
      {
        url: "/gateway/anthropic/v1/models/claude-haiku-4-5",
        headers: { authorization: "Bearer sk-ant-oat01-real", "anthropic-beta": "oauth-2025-04-20" },
      },
    ]);
  });
});

describe("a model API that goes silent", () => {
  /** A POST through the proxy, and what it answered (status, body) or how it ended. */
  const post = (url: string, key: string) =>
    new Promise<{ status: number | null; body: string; ms: number }>((resolve) => {
      const started = Date.now();
      const req = request(`${url}/v1/messages`, { method: "POST", headers: { "x-api-key": key } }, (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => (body += chunk));
        res.on("end", () => resolve({ status: res.statusCode ?? null, body, ms: Date.now() - started }));
        res.on("error", () => resolve({ status: res.statusCode ?? null, body, ms: Date.now() - started }));
      });
      req.on("error", () => resolve({ status: null, body: "", ms: Date.now() - started }));
      req.setTimeout(10_000, () => req.destroy());
      req.end("{}");
    });

  /** A proxy to `upstream` with a silence deadline of 1 s and a grace of 0.5 s; what stopped it. */
  const watched = async (upstream: string) => {
    const stops: Trouble[] = [];
    proxy = await startCredentialProxy(
      { kind: "api_key", key: REAL },
      { upstream, silenceMs: 1_000, graceMs: 500, onStop: (t) => stops.push(t) },
    );
    return stops;
  };

  it("answers a request left without a byte for the silence deadline, and stops the agent after the grace", async () => {
    const silent = await recorder(() => {});
    const stops = await watched(silent.url);
    const answer = await post(proxy!.url, proxy!.key);
    // Answered, where a proxy that waited on would have let the client's own timeout end the request.
    expect(answer.status).toBe(504);
    expect(JSON.parse(answer.body).error.message).toBe(
      `the model API at ${silent.url} (ANTHROPIC_BASE_URL) cannot be reached: it sent nothing for 1 s after taking a request`,
    );
    await until(() => stops.length > 0, "the proxy stops the agent after the grace");
    expect(stops).toEqual([
      {
        problem: `the model API at ${silent.url} (ANTHROPIC_BASE_URL) cannot be reached: it sent nothing for 1 s after taking a request`,
        fix: "check that it is up (or unset ANTHROPIC_BASE_URL)",
      },
    ]);
  });

  it("leaves alone a stream that keeps sending, however long it takes", async () => {
    const slow = await recorder((res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write(
        'event: message_start\ndata: {"type":"message_start","message":{"usage":{"input_tokens":1,"output_tokens":1}}}\n\n',
      );
      let pings = 0;
      const timer = setInterval(() => {
        res.write('event: ping\ndata: {"type": "ping"}\n\n');
        if (++pings === 6) {
          clearInterval(timer);
          res.end("event: message_stop\ndata: {}\n\n");
        }
      }, 400);
    });
    const stops = await watched(slow.url);
    const answer = await post(proxy!.url, proxy!.key);
    expect(answer.status).toBe(200);
    expect(answer.ms).toBeGreaterThan(2_000);
    expect(answer.body.match(/event: ping/g)).toHaveLength(6);
    expect(answer.body).toContain("message_stop");
    expect(stops).toEqual([]);
  });
});
