/**
 * GitHub counts an app installation's rate limits once for all the repositories it covers (the
 * primary limit "for the installation", and the secondary limits on content-generating requests), so
 * a graph spanning two repositories of one installation has the one installation's 500 writes an hour,
 * not 500 in each: the fake of several repositories counts them as GitHub does
 * (https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api).
 */
import { describe, expect, it } from "vitest";
import { FakeRepositories } from "../../harness/fake-repositories.ts";
import { LIMITS } from "../../harness/fake-rate-limits.ts";

async function tokenOf(github: FakeRepositories, installation: number): Promise<string> {
  const [status, body] = await github.serve("POST", `/app/installations/${installation}/access_tokens`, {});
  expect(status).toBe(201);
  return `token ${(body as { token: string }).token}`;
}

describe("rate limits across the repositories of an installation", () => {
  it("count one installation's writes once, whichever repository they go to; another installation's apart", async () => {
    const github = new FakeRepositories();
    github.add("octo/api", 42);
    const other = github.add("other/lib", 77);
    const [ours, theirs] = [await tokenOf(github, 42), await tokenOf(github, 77)];
    const issue = (repository: string, token: string) =>
      github.serve("POST", `/repos/${repository}/issues`, { title: "t" }, "", token);
    const { clock } = github.first;
    for (let i = 0; i < LIMITS.writesPerHour; i++) {
      const [status] = await issue(i % 2 ? "octo/api" : "octo/demo", ours);
      expect(status).toBe(201);
      clock.advance(1_000); // 60 a minute: under the minute's limit
    }
    // The hour's 500 are spent for octo/api as much as for octo/demo, where half of them went.
    const [refused, body] = await issue("octo/api", ours);
    expect(refused).toBe(403);
    expect((body as { message: string }).message).toMatch(/secondary rate limit/);
    expect((await issue("octo/demo", ours))[0]).toBe(403);
    // Another account's installation has its own count.
    expect((await issue("other/lib", theirs))[0]).toBe(201);
    expect(other.rateLimits).not.toBe(github.first.rateLimits);
    expect(github.repositories.get("octo/api")!.rateLimits).toBe(github.first.rateLimits);
  });
});
