import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { resultText, sequence, startScriptedModel, toolResults } from "../../src/scripted/model-server.ts";
import { runClaude } from "../../harness/claude.ts";

describe("the scripted model server with the real Claude Code CLI", () => {
  const dir = mkdtempSync(join(tmpdir(), "agentrelay-claude-"));
  const servers: { close(): Promise<void> }[] = [];
  afterAll(async () => Promise.all(servers.map((s) => s.close())));

  it("drives real tool calls and ends with the scripted answer", async () => {
    const server = await startScriptedModel(
      sequence(
        [
          { name: "Write", input: { file_path: join(dir, "notes.md"), content: "written by the agent\n" } },
          { name: "Bash", input: { command: "wc -c < notes.md > size.txt", description: "measure" } },
        ],
        "Finished.\nCOMPLETION_STATUS: COMPLETE",
      ),
    );
    servers.push(server);
    const run = await runClaude(dir, "Write notes.md and measure it.", server.url, [
      "--allowedTools",
      "Write,Read,Bash",
      "--permission-mode",
      "acceptEdits",
      "--model",
      "claude-sonnet-4-6",
    ]);
    expect(run.code).toBe(0);
    expect(readFileSync(join(dir, "notes.md"), "utf8")).toBe("written by the agent\n");
    expect(readFileSync(join(dir, "size.txt"), "utf8").trim()).toBe("21");
    const result = run.lines.at(-1)!;
    expect(result).toMatchObject({ type: "result", subtype: "success", is_error: false, num_turns: 3 });
    expect(result.result).toBe("Finished.\nCOMPLETION_STATUS: COMPLETE");
    // The model saw the real tool results.
    const last = server.requests.filter((r) => (r.tools?.length ?? 0) > 0).at(-1)!;
    expect(toolResults(last)).toHaveLength(2);
    expect(resultText(toolResults(last)[0]!)).toMatch(/notes\.md/);
    expect(existsSync(join(dir, "size.txt"))).toBe(true);
  });
});
