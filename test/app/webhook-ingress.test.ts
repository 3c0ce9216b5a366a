/**
 * The webhook endpoint on its own, with GitHub's published test vector and a secret being rotated.
 * Probot's `receive` is a recorder here: what matters is what reaches it.
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { sign } from "@octokit/webhooks-methods";
import type { Probot } from "probot";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { webhookIngress } from "../../src/app/ingress.ts";

const received: { id: string; name: string }[] = [];
const logs: string[] = [];
let url = "";
const probot = { receive: async (event: { id: string; name: string }) => void received.push(event) };
const server = createServer((req, res) => {
  const ingress = webhookIngress(probot as unknown as Probot, {
    path: "/hook",
    secret: "It's a Secret to Everybody",
    previousSecrets: ["the old secret"],
    log: (line) => logs.push(line),
  });
  void ingress(req, res).then((handled) => (handled ? undefined : res.writeHead(404).end()));
});
beforeAll(async () => {
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
});
afterAll(() => new Promise((done) => server.close(done)));

async function post(body: string, signature: string, event = "ping", id = "d") {
  const response = await fetch(url, {
    method: "POST",
    headers: { "x-github-event": event, "x-github-delivery": id, "x-hub-signature-256": signature },
    body,
  });
  return { status: response.status, text: (await response.text()).trim() };
}

describe("the webhook endpoint", () => {
  it("verifies GitHub's published test vector over the raw bytes, and refuses it with one digit changed", async () => {
    const vector = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";
    // Signed, but not JSON: the signature passed, the body did not.
    expect(await post("Hello, World!", vector)).toEqual({ status: 400, text: "the body is not JSON" });
    const flipped = `${vector.slice(0, -1)}8`;
    expect((await post("Hello, World!", flipped)).text).toMatch(/^the signature does not match/);
    expect((await post("Hello,  World!", vector)).text).toMatch(/^the signature does not match/);
    expect((await post("Hello, World!", "sha1=abc")).text).toMatch(/^the signature does not match/);
    expect(received).toEqual([]);
  });

  it("accepts the previous secret while it is rotated out, and hands only verified events on", async () => {
    const body = JSON.stringify({ zen: "Keep it logically awesome." });
    expect((await post(body, await sign("the old secret", body), "ping", "old")).status).toBe(200);
    expect((await post(body, await sign("a stranger's", body), "ping", "forged")).status).toBe(400);
    expect(received.map((e) => e.id)).toEqual(["old"]);
  });

  it("answers 202 when the handler takes longer than it may, and the handler goes on", async () => {
    let finish = () => {};
    const slow = { receive: () => new Promise<void>((done) => (finish = done)) };
    const ingress = webhookIngress(slow as unknown as Probot, {
      path: "/slow",
      secret: "s",
      log: () => {},
      answerWithinMs: 50,
    });
    const slowServer = createServer((req, res) => void ingress(req, res));
    await new Promise<void>((done) => slowServer.listen(0, "127.0.0.1", done));
    try {
      const body = JSON.stringify({ zen: "slow" });
      const response = await fetch(`http://127.0.0.1:${(slowServer.address() as AddressInfo).port}/slow`, {
        method: "POST",
        headers: {
          "x-github-event": "ping",
          "x-github-delivery": "s",
          "x-hub-signature-256": await sign("s", body),
        },
        body,
      });
      expect([response.status, (await response.text()).trim()]).toEqual([202, "still processing"]);
    } finally {
      finish();
      await new Promise((done) => slowServer.close(done));
    }
  });

  it("passes an event the app does not handle, and answers a missing header with what is missing", async () => {
    const body = JSON.stringify({ action: "labeled", label: { name: "x" } });
    expect(
      (await post(body, await sign("It's a Secret to Everybody", body), "label", "unknown")).status,
    ).toBe(200);
    const response = await fetch(url, { method: "POST", headers: { "x-github-event": "push" }, body });
    expect([response.status, (await response.text()).trim()]).toEqual([
      400,
      "the x-hub-signature-256 header is missing",
    ]);
  });
});
