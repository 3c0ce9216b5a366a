import { describe, expect, it } from "vitest";
import { type HoldClock, reportHolding } from "../../src/action/report-hold.ts";
import { REPORT_HOLD_HEADER, REPORT_HOLD_MS } from "../../src/protocol/report.ts";

/** A clock that only moves when the runner sleeps. */
function scriptedClock(start: number): HoldClock & { slept: number[] } {
  let now = start;
  const slept: number[] = [];
  return {
    slept,
    now: () => now,
    sleep: async (ms) => {
      slept.push(ms);
      now += ms;
    },
  };
}

/** An app that holds the report `times` times, recording the headers of each post. */
function app(times: number) {
  const posts: Record<string, string>[] = [];
  const post = async (headers: Record<string, string>) => {
    posts.push(headers);
    return posts.length <= times && headers[REPORT_HOLD_HEADER] === "1"
      ? { ok: true, held: true, retry_after_ms: 30_000 }
      : { ok: true, status: "merged" };
  };
  return { posts, post };
}

describe("a runner holding its report", () => {
  it("reports again as the app asks until the app takes the report", async () => {
    const clock = scriptedClock(1_000_000);
    const { posts, post } = app(3);
    const said: string[] = [];
    const answer = await reportHolding(post, clock.now(), (line) => said.push(line), clock);
    expect(answer).toEqual({ ok: true, status: "merged" });
    expect(posts).toHaveLength(4);
    expect(posts.every((h) => h[REPORT_HOLD_HEADER] === "1")).toBe(true);
    expect(clock.slept).toEqual([30_000, 30_000, 30_000]);
    expect(said).toHaveLength(1);
  });

  it("holds at most REPORT_HOLD_MS, then reports without holding, which the app always writes", async () => {
    const clock = scriptedClock(0);
    const { posts, post } = app(Infinity);
    const answer = await reportHolding(post, clock.now(), () => undefined, clock);
    expect(answer).toEqual({ ok: true, status: "merged" });
    expect(clock.slept.reduce((a, b) => a + b, 0)).toBe(REPORT_HOLD_MS);
    expect(posts.at(-1)).toEqual({});
    expect(posts.slice(0, -1).every((h) => h[REPORT_HOLD_HEADER] === "1")).toBe(true);
  });

  it("does not hold near the job's timeout: a held report must never cost the attempt", async () => {
    const started = 0;
    const clock = scriptedClock(110 * 60_000); // 110 minutes into a job that times out at 120
    const { posts, post } = app(Infinity);
    await reportHolding(post, started, () => undefined, clock);
    expect(posts).toEqual([{}]);
    expect(clock.slept).toEqual([]);
  });
});
