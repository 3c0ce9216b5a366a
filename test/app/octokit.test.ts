import nock from "nock";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { agentrelayOctokit } from "../../src/app/octokit.ts";

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
