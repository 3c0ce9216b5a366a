/**
 * The tests' stand-in for Claude Code (harness/scripted-claude.mjs) as the attempt reads an agent
 * (src/attempt/claude.ts): it runs the scripted model's tools for real, ends with Claude Code's
 * `result` (turns, cost, the final text), continues a session with `--resume`, and stops at
 * `--max-turns` as Claude Code does. It is a test seam only: no source file names it, and only a test
 * or a person's own `--claude PATH` can start it.
 */
import { mkdtempSync, readdirSync, readFileSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { SCRIPTED_CLAUDE_BIN } from "../../harness/claude.ts";
import { REPO_ROOT } from "../../harness/paths.ts";
import { type ClaudeOptions, runClaudeCode } from "../../src/attempt/claude.ts";
import {
  type ScriptedModelServer,
  sequence,
  startScriptedModel,
  userPrompts,
} from "../../src/scripted/model-server.ts";

const servers: ScriptedModelServer[] = [];
afterAll(async () => Promise.all(servers.map((s) => s.close())));

async function agent(
  steps: { name: string; input: unknown }[],
  final: string,
): Promise<{ dir: string; server: ScriptedModelServer; options: ClaudeOptions; lines: string[] }> {
  const server = await startScriptedModel(sequence(steps, final));
  servers.push(server);
  const dir = mkdtempSync(join(tmpdir(), "agentrelay-stand-in-"));
  const lines: string[] = [];
  const options: ClaudeOptions = {
    bin: SCRIPTED_CLAUDE_BIN,
    cwd: dir,
    env: {
      PATH: process.env.PATH!,
      HOME: dir,
      ANTHROPIC_BASE_URL: server.url,
      ANTHROPIC_API_KEY: "sk-ant-x",
    },
    prompt: "Write notes.md and measure it.",
    model: null,
    maxTurns: 10,
    allowedTools: ["Write", "Bash"],
    addDirs: [],
    timeoutMs: 60_000,
    log: (line) => lines.push(line),
  };
  return { dir, server, options, lines };
}

describe("the tests' stand-in for Claude Code", () => {
  it("runs the model's tools and ends with Claude Code's result, which the attempt reads", async () => {
    const { dir, server, options, lines } = await agent(
      [
        { name: "Write", input: { file_path: "notes.md", content: "written by the agent\n" } },
        { name: "Bash", input: { command: "wc -c < notes.md > size.txt && exit 3" } },
      ],
      "Finished.",
    );
    const result = await runClaudeCode(options);
    expect(result).toMatchObject({ ok: true, turns: 3, finalText: "Finished.", error: null });
    // Three turns of 100 tokens in and 20 out, at Sonnet's price.
    expect(result.costMicros).toBe(3 * (100 * 3 + 20 * 15));
    expect(readFileSync(join(dir, "size.txt"), "utf8").trim()).toBe("21");
    expect(lines).toContain("tool: Bash wc -c < notes.md > size.txt && exit 3");
    // The model saw the command's failure, as Claude Code reports one.
    const last = server.requests.at(-1)!.messages.at(-1)!;
    expect(JSON.stringify(last.content)).toContain('"is_error":true');
    expect(JSON.stringify(last.content)).toContain("Error: Exit code 3");

    // Resumed, the session goes on from where it was.
    const again = await runClaudeCode({ ...options, prompt: "And now?", resume: result.sessionId });
    expect(again.ok).toBe(true);
    expect(userPrompts(server.requests.at(-1)!)).toEqual(["Write notes.md and measure it.", "And now?"]);
  });

  it("stops at its turns' limit, as Claude Code says it", async () => {
    const { options } = await agent([{ name: "Bash", input: { command: "true" } }], "Done.");
    const result = await runClaudeCode({ ...options, maxTurns: 1 });
    expect(result).toMatchObject({ ok: false, error: "Claude Code stopped: error_max_turns" });
  });

  it("is named by no source file: nothing a graph or a user selects starts it", () => {
    const sources = (dir: string): string[] =>
      readdirSync(dir).flatMap((name) => {
        const path = join(dir, name);
        return statSync(path).isDirectory() ? sources(path) : [path];
      });
    const naming = sources(join(REPO_ROOT, "src")).filter((file) =>
      readFileSync(file, "utf8").includes("scripted-claude"),
    );
    expect(naming).toEqual([]);
  });
});
