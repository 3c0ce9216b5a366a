import { describe, expect, it } from "vitest";
import { type HostedRun, hostedRunOf, newMeta } from "../../src/github/hosted-run.ts";

describe("a stored run", () => {
  it("written before workstreams were named so everywhere still reads: its mirrored comments are kept", () => {
    const { workstreamComments: _, ...meta } = newMeta();
    const old = { github: { ...meta, laneComments: { ws_a: 7 } } } as unknown as HostedRun;
    const run = hostedRunOf(old);
    expect(run.github.workstreamComments).toEqual({ ws_a: 7 });
    expect(run.github).not.toHaveProperty("laneComments");
  });
});
