/**
 * bench/sample-cost: what the sample graph `init` writes (.workflow/hello.yaml) costs with a real
 * model, for the README. The run is the real one (the real Claude Code CLI, the real prompts and
 * tools) with the scripted model answering, which records every request Claude Code sends; those are
 * what a real model would be sent. Tokens are estimated from their size, at 4 and at 3 characters a
 * token (English prose is nearer 4, the JSON of tool schemas nearer 3), and priced at the sample's
 * model's list prices, with the prompt caching Claude Code asks for (the first turn writes the cache,
 * later turns read it). A real model may take more turns than the scripted three: each costs about
 * one cache read of the prompt more.
 *
 * Prices: Claude Haiku 4.5, $1 per million input tokens, $5 output, $1.25 for 5-minute cache writes
 * and $0.10 for cache reads (https://platform.claude.com/docs/en/about-claude/pricing).
 */
import { execFileSync, spawn } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { CLAUDE_BIN } from "../harness/claude.ts";
import { demoAgent } from "../src/scripted/demo-agent.ts";
import { type MessagesRequest, startScriptedModel } from "../src/scripted/model-server.ts";
import { table } from "./table.ts";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const PRICE = { input: 1, cacheWrite: 1.25, cacheRead: 0.1, output: 5 }; // USD per million tokens
/** What a model writes for this task: a sentence and three tool calls, generously. */
const OUTPUT_TOKENS_PER_TURN = 300;

/** The prompt of a request as the model reads it: tools, system, messages. */
const promptChars = (r: MessagesRequest) =>
  JSON.stringify(r.tools ?? []).length +
  JSON.stringify(r.system ?? "").length +
  JSON.stringify(r.messages).length;

async function sampleRequests(): Promise<MessagesRequest[]> {
  const server = await startScriptedModel(demoAgent);
  try {
    const repo = mkdtempSync(join(tmpdir(), "agentrelay-cost-"));
    const git = (...args: string[]) => execFileSync("git", args, { cwd: repo, stdio: "ignore" });
    git("init", "-q", "-b", "main");
    git("-c", "user.name=a", "-c", "user.email=a@b", "commit", "-q", "--allow-empty", "-m", "init");
    mkdirSync(join(repo, ".workflow"));
    copyFileSync(join(ROOT, "templates/sample-graph.yaml"), join(repo, ".workflow/hello.yaml"));
    const child = spawn(
      process.execPath,
      [
        join(ROOT, "bin/agentrelay.js"),
        "run",
        ".workflow/hello.yaml",
        "--repo",
        repo,
        "--claude",
        CLAUDE_BIN,
      ],
      {
        cwd: repo,
        stdio: "ignore",
        env: { ...process.env, ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: "sk-ant-bench" },
      },
    );
    const code = await new Promise<number | null>((done) => child.on("exit", done));
    // 3: the sample's integration waits for a person, as it should.
    if (code !== 3) throw new Error(`the sample's run ended with exit code ${code}, not 3`);
    return [...server.requests];
  } finally {
    await server.close();
  }
}

export async function sampleCostBench(): Promise<string> {
  const requests = (await sampleRequests()).filter((r) => (r.tools?.length ?? 0) > 0);
  const model = requests[0]?.model ?? "none";
  const chars = requests.map(promptChars);
  const rows = [4, 3].map((perToken) => {
    const tokens = chars.map((c) => c / perToken);
    // Turn 1 writes the whole prompt to the cache; each later turn reads what the turn before sent
    // and writes what is new (the last answer and tool result).
    const written = tokens[0]! + tokens.slice(1).reduce((sum, t, i) => sum + (t - tokens[i]!), 0);
    const read = tokens.slice(0, -1).reduce((sum, t) => sum + t, 0);
    const output = OUTPUT_TOKENS_PER_TURN * tokens.length;
    const usd = (written * PRICE.cacheWrite + read * PRICE.cacheRead + output * PRICE.output) / 1e6;
    const extraTurn = ((tokens.at(-1) ?? 0) * PRICE.cacheRead + OUTPUT_TOKENS_PER_TURN * PRICE.output) / 1e6;
    return [
      `${perToken} chars a token`,
      String(tokens.length),
      `${Math.round((tokens[0] ?? 0) / 1000)}k`,
      `${Math.round(written / 1000)}k`,
      `${Math.round(read / 1000)}k`,
      String(output),
      `$${usd.toFixed(3)}`,
      `$${extraTurn.toFixed(4)}`,
    ];
  });
  return [
    `The sample's one session, as Claude Code sends it to ${model} (prompt sizes measured; tokens estimated):`,
    "",
    table(
      [
        "estimate",
        "turns",
        "prompt, turn 1 (tokens)",
        "cache writes",
        "cache reads",
        "output",
        "cost",
        "each further turn",
      ],
      rows,
    ),
  ].join("\n");
}
