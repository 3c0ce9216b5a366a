#!/usr/bin/env node
/**
 * A small stand-in for the Claude Code CLI, for tests whose behaviour is the runner's and not the
 * agent's: it speaks the part of Claude Code's command line that the attempt uses (`-p PROMPT
 * --output-format stream-json --verbose --max-turns N [--resume ID] [--model M] [--max-budget-usd X]`,
 * and `--version`), asks the model at ANTHROPIC_BASE_URL (through HTTP_PROXY when it is set, as the
 * attempt's network namespace requires) for each turn, runs the tools the model calls (Bash, Read,
 * Write, Edit) and prints Claude Code's stream-json lines, ending with its `result`.
 *
 * It starts in a few hundredths of a CPU-second where Claude Code takes about one, which is what a
 * local run of a test spends most on. Everything around it is the product's own: the attempt process,
 * its credential and egress proxies, the worktree, the gates, the landing guards and the signals. It
 * enforces none of Claude Code's own rules (permissions, protected directories, its retries), so a
 * test of those runs the real CLI. It lives in harness/ and is given only as `claudeBin`, the path of
 * the agent binary a user could name with `--claude`: nothing in src/ knows it.
 */
import { Buffer } from "node:buffer";
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { dirname, isAbsolute, join, resolve } from "node:path";
import process from "node:process";
import { clearTimeout, setTimeout } from "node:timers";
import { URL } from "node:url";

/** The Claude Code version it answers `--version` with: the one package.json pins, which it stands for. */
const VERSION = "2.1.197";
/** Claude Code's default model, priced as the model meter prices it (Sonnet: $3 and $15 a million tokens). */
const DEFAULT_MODEL = "claude-sonnet-4-5";
const PRICE = { input: 3 / 1e6, output: 15 / 1e6 };
const BASH_TIMEOUT_MS = 120_000;

const argv = process.argv.slice(2);
if (argv.includes("--version")) {
  process.stdout.write(`${VERSION} (Claude Code; the tests' scripted stand-in)\n`);
  process.exit(0);
}
const option = (name) => {
  const at = argv.indexOf(name);
  return at >= 0 ? argv[at + 1] : undefined;
};
const prompt = option("-p") ?? "";
const maxTurns = Number(option("--max-turns") ?? 20);
const model = option("--model") ?? process.env.ANTHROPIC_MODEL ?? DEFAULT_MODEL;
const budget = option("--max-budget-usd") === undefined ? null : Number(option("--max-budget-usd"));
const cwd = process.cwd();
const home = process.env.HOME ?? cwd;
const sessionFile = (id) => join(home, ".claude-scripted", `${id}.json`);

const resumed = option("--resume");
const sessionId = resumed ?? randomUUID();
const messages =
  resumed && existsSync(sessionFile(resumed)) ? JSON.parse(readFileSync(sessionFile(resumed), "utf8")) : [];
messages.push({ role: "user", content: [{ type: "text", text: prompt }] });

const emit = (line) => process.stdout.write(`${JSON.stringify({ ...line, session_id: sessionId })}\n`);

const TOOLS = [
  [
    "Bash",
    "Runs a shell command.",
    { command: { type: "string" }, timeout: { type: "number" } },
    ["command"],
  ],
  ["Read", "Reads a file.", { file_path: { type: "string" } }, ["file_path"]],
  [
    "Write",
    "Writes a file.",
    { file_path: { type: "string" }, content: { type: "string" } },
    ["file_path", "content"],
  ],
  [
    "Edit",
    "Replaces text in a file.",
    {
      file_path: { type: "string" },
      old_string: { type: "string" },
      new_string: { type: "string" },
      replace_all: { type: "boolean" },
    },
    ["file_path", "old_string", "new_string"],
  ],
].map(([name, description, properties, required]) => ({
  name,
  description,
  input_schema: { type: "object", properties, required },
}));

/** One POST of the Messages API, through the egress proxy when there is one (plain HTTP, absolute URL). */
function post(body) {
  const target = new URL(
    "v1/messages",
    `${(process.env.ANTHROPIC_BASE_URL ?? "https://api.anthropic.com").replace(/\/?$/, "/")}`,
  );
  const proxy = process.env.HTTP_PROXY || process.env.http_proxy;
  const via = proxy ? new URL(proxy) : target;
  const data = Buffer.from(JSON.stringify(body));
  const key = process.env.ANTHROPIC_API_KEY;
  const token = process.env.ANTHROPIC_AUTH_TOKEN || process.env.CLAUDE_CODE_OAUTH_TOKEN;
  return new Promise((resolvePost, reject) => {
    const req = request(
      {
        host: via.hostname,
        port: via.port || 80,
        method: "POST",
        path: proxy ? target.href : `${target.pathname}${target.search}`,
        headers: {
          host: target.host,
          "content-type": "application/json",
          "content-length": data.length,
          "anthropic-version": "2023-06-01",
          ...(key ? { "x-api-key": key } : token ? { authorization: `Bearer ${token}` } : {}),
        },
      },
      (res) => {
        const chunks = [];
        res.on("data", (c) => chunks.push(c));
        res.on("end", () =>
          resolvePost({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString("utf8") }),
        );
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(data);
  });
}

/** A turn, retried a few times while the API is unreachable or overloaded (Claude Code retries longer). */
async function ask() {
  const body = {
    model,
    max_tokens: 32_000,
    system: "You are a coding agent.",
    messages,
    tools: TOOLS,
    stream: false,
  };
  for (let tries = 1; ; tries++) {
    try {
      const answer = await post(body);
      if ((answer.status >= 500 || answer.status === 429) && tries < 5)
        throw new Error(`status ${answer.status}`);
      return answer;
    } catch (error) {
      if (tries >= 5) throw error;
      await new Promise((r) => setTimeout(r, 200 * 2 ** tries));
    }
  }
}

const abs = (path) => (isAbsolute(path) ? path : resolve(cwd, path));

function bash(command, timeoutMs) {
  return new Promise((done) => {
    const child = spawn("bash", ["-c", command], {
      cwd,
      env: process.env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout.on("data", (d) => (output += d));
    child.stderr.on("data", (d) => (output += d));
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    child.on("close", (code) => {
      clearTimeout(timer);
      const text = output.trimEnd().slice(-30_000);
      done(code === 0 ? { content: text } : { content: `Error: Exit code ${code}\n${text}`, is_error: true });
    });
  });
}

async function runTool(name, input) {
  try {
    if (name === "Bash")
      return await bash(String(input.command), Math.min(Number(input.timeout) || BASH_TIMEOUT_MS, 600_000));
    if (name === "Read")
      return {
        content: readFileSync(abs(input.file_path), "utf8")
          .split("\n")
          .map((line, i) => `${String(i + 1).padStart(6)}\t${line}`)
          .join("\n"),
      };
    if (name === "Write") {
      mkdirSync(dirname(abs(input.file_path)), { recursive: true });
      writeFileSync(abs(input.file_path), String(input.content));
      return { content: `File created successfully at: ${input.file_path}` };
    }
    if (name === "Edit") {
      const text = readFileSync(abs(input.file_path), "utf8");
      if (!text.includes(input.old_string))
        return { content: "String to replace not found in file.", is_error: true };
      const next = input.replace_all
        ? text.split(input.old_string).join(input.new_string)
        : text.replace(input.old_string, () => input.new_string);
      writeFileSync(abs(input.file_path), next);
      return { content: `The file ${input.file_path} has been updated.` };
    }
    return { content: `No such tool available: ${name}`, is_error: true };
  } catch (error) {
    return { content: String(error.message ?? error), is_error: true };
  }
}

emit({ type: "system", subtype: "init", cwd, model, tools: TOOLS.map((t) => t.name) });
let turns = 0;
let cost = 0;
const finish = (subtype, text, isError) => {
  mkdirSync(dirname(sessionFile(sessionId)), { recursive: true });
  writeFileSync(sessionFile(sessionId), JSON.stringify(messages));
  emit({ type: "result", subtype, is_error: isError, num_turns: turns, result: text, total_cost_usd: cost });
  process.exit(isError ? 1 : 0);
};
for (;;) {
  let answer;
  try {
    answer = await ask();
  } catch (error) {
    finish("success", `API Error: Connection error (${error.message})`, true);
  }
  if (answer.status !== 200)
    finish("success", `API Error: ${answer.status} ${answer.text.slice(0, 500)}`, true);
  const message = JSON.parse(answer.text);
  turns++;
  cost +=
    (message.usage?.input_tokens ?? 0) * PRICE.input + (message.usage?.output_tokens ?? 0) * PRICE.output;
  messages.push({ role: "assistant", content: message.content });
  emit({ type: "assistant", message });
  const uses = message.content.filter((b) => b.type === "tool_use");
  const text = message.content
    .filter((b) => b.type === "text")
    .map((b) => b.text)
    .join("\n");
  if (budget !== null && cost >= budget) finish("error_max_budget_usd", "", true);
  if (uses.length === 0) finish("success", text, false);
  if (turns >= maxTurns) finish("error_max_turns", "", true);
  const results = [];
  for (const use of uses)
    results.push({ type: "tool_result", tool_use_id: use.id, ...(await runTool(use.name, use.input)) });
  messages.push({ role: "user", content: results });
  emit({ type: "user", message: { role: "user", content: results } });
}
