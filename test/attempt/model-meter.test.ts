/**
 * Every model call through the credential proxy is metered from its answer's usage (security case 71), streamed or not,
 * and charged; past the cap no call is made; an answer the proxy cannot meter is refused (502), never
 * passed on uncounted.
 */
import { createServer, request, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { gzipSync } from "node:zlib";
import { afterEach, describe, expect, it } from "vitest";
import { type CredentialProxy, startCredentialProxy } from "../../src/attempt/credential-proxy.ts";

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

async function upstream(answer: (res: ServerResponse, body: string) => void): Promise<string> {
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (chunk) => (body += chunk));
    req.on("end", () => answer(res, body));
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const post = (body: object) =>
  new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = request(
      `${proxy!.url}/v1/messages`,
      { method: "POST", headers: { "x-api-key": proxy!.key, "content-type": "application/json" } },
      (res) => {
        let text = "";
        res.on("data", (chunk) => (text += chunk));
        res.on("end", () => resolve({ status: res.statusCode!, body: text }));
        res.on("error", () => resolve({ status: res.statusCode!, body: text }));
      },
    );
    req.on("error", reject);
    req.end(JSON.stringify(body));
  });

const sse = (type: string, data: object) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
const SONNET = "claude-sonnet-4-5";
const ASK = { model: SONNET, max_tokens: 1000, messages: [] };

describe("the credential proxy's meter", () => {
  it("charges a whole answer from its usage, cache and web search included, as Anthropic prices them", async () => {
    const url = await upstream((res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(
        JSON.stringify({
          model: SONNET,
          usage: {
            input_tokens: 100,
            output_tokens: 20,
            cache_creation_input_tokens: 1000,
            cache_read_input_tokens: 1000,
            server_tool_use: { web_search_requests: 2 },
          },
        }),
      );
    });
    proxy = await startCredentialProxy({ kind: "api_key", key: "real" }, { upstream: url });
    expect((await post(ASK)).status).toBe(200);
    // 100 x $3/M + 20 x $15/M + 1000 x $3.75/M + 1000 x $0.30/M + 2 x $0.01
    expect(proxy.spentMicros()).toBe(300 + 300 + 3750 + 300 + 20_000);
  });

  it("charges a streamed answer from its last message_delta, and a stream cut short the most it could cost", async () => {
    let cut = false;
    const url = await upstream((res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write(
        sse("message_start", { message: { model: SONNET, usage: { input_tokens: 100, output_tokens: 1 } } }),
      );
      res.write(sse("content_block_delta", { index: 0, delta: { type: "text_delta", text: "hi" } }));
      if (cut) return void setTimeout(() => res.destroy(), 50);
      res.write(sse("message_delta", { delta: { stop_reason: "end_turn" }, usage: { output_tokens: 20 } }));
      res.end(sse("message_stop", {}));
    });
    proxy = await startCredentialProxy({ kind: "api_key", key: "real" }, { upstream: url });
    const whole = await post({ ...ASK, stream: true });
    expect(whole.body).toContain("message_stop");
    expect(proxy.spentMicros()).toBe(600);
    cut = true;
    await post({ ...ASK, stream: true });
    await new Promise((resolve) => setTimeout(resolve, 100));
    // Its input and all of its max_tokens (1000 x $15/M).
    expect(proxy.spentMicros()).toBe(600 + 300 + 15_000);
  });

  it("makes no call once the cap is spent", async () => {
    let calls = 0;
    const url = await upstream((res) => {
      calls++;
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ model: SONNET, usage: { input_tokens: 1000, output_tokens: 0 } }));
    });
    proxy = await startCredentialProxy({ kind: "api_key", key: "real" }, { upstream: url, capMicros: 5_000 });
    const answers = [];
    for (let i = 0; i < 4; i++) answers.push(await post(ASK));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 400, 400]);
    expect(answers[2]!.body).toContain("this attempt's budget of $0.005 is spent");
    expect(calls).toBe(2);
    expect(proxy.spentMicros()).toBe(6_000);
  });

  it("refuses (502) an answer it cannot meter: no usage, compressed, another type, a stream without message_start", async () => {
    const answers: ((res: ServerResponse) => void)[] = [
      (res) => {
        res.writeHead(200, { "content-type": "application/json" });
        res.end('{"content": "no usage"}');
      },
      (res) => {
        res.writeHead(200, { "content-type": "application/json", "content-encoding": "gzip" });
        res.end(gzipSync('{"usage": {"input_tokens": 1, "output_tokens": 1}}'));
      },
      (res) => {
        res.writeHead(200, { "content-type": "text/plain" });
        res.end("hello");
      },
      (res) => {
        res.writeHead(200, { "content-type": "text/event-stream" });
        res.end(sse("content_block_delta", { index: 0, delta: { text: "unmetered" } }));
      },
    ];
    let n = 0;
    const url = await upstream((res) => answers[n++]!(res));
    proxy = await startCredentialProxy({ kind: "api_key", key: "real" }, { upstream: url });
    for (let i = 0; i < answers.length; i++) {
      const answer = await post(ASK);
      expect(answer.status).toBe(502);
      expect(answer.body).toContain("cannot be metered");
      expect(answer.body).not.toContain("unmetered");
    }
    // Each may have been billed: each is charged the most it could have cost.
    expect(proxy.spentMicros()).toBeGreaterThanOrEqual(4 * 15_000);
  });
});

describe("an error answer", () => {
  it("is passed on and charged nothing (the API bills successful messages only)", async () => {
    const url = await upstream((res) => {
      res.writeHead(529, { "content-type": "application/json" });
      res.end('{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}');
    });
    proxy = await startCredentialProxy({ kind: "api_key", key: "real" }, { upstream: url });
    const answer = await post(ASK);
    expect(answer.status).toBe(529);
    expect(answer.body).toContain("overloaded_error");
    expect(proxy.spentMicros()).toBe(0);
  });
});
