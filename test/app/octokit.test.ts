import { generateKeyPairSync } from "node:crypto";
import { decodeJwt } from "jose";
import nock from "nock";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { agentrelayOctokit, appJwtSigner } from "../../src/app/octokit.ts";

const SECONDARY = {
  message: "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.",
};

beforeEach(() => nock.disableNetConnect());
afterEach(() => {
  nock.cleanAll();
  nock.enableNetConnect();
});

describe("the app's Octokit", () => {
  const octokit = () => new (agentrelayOctokit({ retryBaseMs: 1 }))({ auth: "token" });

  it("waits out a secondary rate limit as GitHub says and tries again", async () => {
    const scope = nock("https://api.github.com")
      .get("/repos/o/r")
      .twice()
      .reply(403, SECONDARY, { "retry-after": "1" })
      .get("/repos/o/r")
      .reply(200, { name: "r" });
    const { data } = await octokit().rest.repos.get({ owner: "o", repo: "r" });
    expect(data.name).toBe("r");
    expect(scope.isDone()).toBe(true);
  });

  it("gives up after a bounded number of retries instead of looping", async () => {
    const scope = nock("https://api.github.com")
      .get("/repos/o/r")
      .times(4)
      .reply(403, SECONDARY, { "retry-after": "1" });
    await expect(octokit().rest.repos.get({ owner: "o", repo: "r" })).rejects.toThrow(/secondary rate limit/);
    expect(scope.isDone()).toBe(true);
  });

  it("retries 5xx answers", async () => {
    nock("https://api.github.com")
      .get("/repos/o/r")
      .twice()
      .reply(502, "bad gateway")
      .get("/repos/o/r")
      .reply(200, { name: "r" });
    expect((await octokit().rest.repos.get({ owner: "o", repo: "r" })).data.name).toBe("r");
  });
});

describe("the app's JWT", () => {
  const pem = () =>
    generateKeyPairSync("rsa", {
      modulusLength: 2048,
      privateKeyEncoding: { type: "pkcs8", format: "pem" },
      publicKeyEncoding: { type: "spki", format: "pem" },
    }).privateKey;

  afterEach(() => vi.useRealTimers());

  it("is signed once and reused until a minute before it expires", async () => {
    vi.useFakeTimers({ now: new Date("2026-11-22T10:00:00Z"), toFake: ["Date"] });
    const sign = appJwtSigner(pem());
    const first = await sign(7);
    expect(decodeJwt(first.jwt).iss).toBe(7);
    vi.setSystemTime(new Date("2026-11-22T10:08:00Z"));
    expect((await sign(7)).jwt).toBe(first.jwt);
    vi.setSystemTime(new Date("2026-11-22T10:09:10Z"));
    const renewed = await sign(7);
    expect(renewed.jwt).not.toBe(first.jwt);
    expect(Date.parse(renewed.expiresAt)).toBeGreaterThan(Date.parse(first.expiresAt));
  });

  it("is signed afresh for another app or clock difference", async () => {
    const sign = appJwtSigner(pem());
    const first = await sign(7);
    expect((await sign(8)).jwt).not.toBe(first.jwt);
    const skewed = await sign(8, 120);
    expect(decodeJwt(skewed.jwt).iat! - Math.floor(Date.now() / 1000)).toBeGreaterThan(60);
  });

  it("is what the app's Octokit sends on app-level calls, one signature for many calls", async () => {
    const privateKey = pem();
    const seen: string[] = [];
    nock("https://api.github.com")
      .get("/app")
      .times(3)
      .reply(function () {
        seen.push(String(this.req.headers.authorization));
        return [200, { id: 7 }];
      });
    const App = agentrelayOctokit();
    for (let i = 0; i < 3; i++)
      await new App({ auth: { appId: 7, privateKey } }).rest.apps.getAuthenticated();
    expect(seen).toHaveLength(3);
    expect(new Set(seen).size).toBe(1);
    expect(decodeJwt(seen[0]!.replace(/^bearer /i, "")).iss).toBe(7);
  });
});
