/**
 * `agentrelay simulate --at EVENTS`: the status comment (or the --json) of a run stopped mid-way,
 * while jobs run and PRs are open, run in-process.
 */
import { describe, expect, it } from "vitest";
import { simulateCommand } from "../../src/cli/commands/simulate.ts";
import { UsageError } from "../../src/cli/io.ts";
import { graphFile } from "../support/cli.ts";
import { scaleGraph } from "../support/runs.ts";

const file = graphFile(scaleGraph(5, 2, 10));

async function simulateOut(options: { at?: string; json?: boolean; markdown?: boolean }): Promise<string> {
  let out = "";
  const io = { out: (text: string) => (out += text), err: () => {} };
  await simulateCommand(
    file,
    {
      fail: [],
      concern: [],
      json: options.json ?? false,
      markdown: options.markdown ?? false,
      at: options.at,
    },
    io,
  );
  return out;
}

describe("simulate --at", () => {
  it("previews the status comment while a job runs and a PR is open", async () => {
    const markdown = await simulateOut({ at: "5", markdown: true });
    expect(markdown).toContain("### agentrelay run `scale-5/1`: running (1 running, 1 PR open, 3 to do)");
    expect(markdown).toMatch(/^- Waiting for 1 job: `t\d`\.$/m);
    expect(markdown).toContain("- Opening 1 task PR: `t0`.");
    expect(markdown).toContain("- 3 tasks to do wait their turn behind work that moves on its own.");
    // The --json at the same moment says the same.
    const json = JSON.parse(await simulateOut({ at: "5", json: true })) as {
      tasks: Record<string, { status: string; heldBy?: string }>;
    };
    const statuses = Object.values(json.tasks)
      .map((t) => t.status)
      .sort();
    expect(statuses).toEqual(["pending", "pending", "pending", "pr_open", "running"]);
    expect(Object.values(json.tasks).filter((t) => t.heldBy === "turn")).toHaveLength(3);
    // Without --at, the run goes to its end.
    expect(await simulateOut({ markdown: true })).not.toContain(": running (");
  });

  it.each(["0", "-1", "x", "1.5"])("refuses --at %s with the form it takes", async (at) => {
    await expect(simulateOut({ at, markdown: true })).rejects.toThrow(
      new UsageError(`--at expects a number of events from 1, got '${at}'`),
    );
  });
});
