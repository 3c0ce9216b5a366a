/**
 * A scripted model server: a local stand-in for the Anthropic Messages API that the real Claude Code
 * CLI talks to (through `ANTHROPIC_BASE_URL`). The agent is real (it runs its tools for real); only
 * the model's turns are scripted. Tests and the demo use it so that a whole run needs no account.
 *
 * A script is a function of the whole conversation (the CLI adds reminders and retries, so a script
 * must not assume that the last message is its own tool result), and every exchange is bounded.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export type ContentBlock =
  | { type: "text"; text: string }
  | { type: "tool_use"; id: string; name: string; input: unknown }
  | { type: "tool_result"; tool_use_id: string; content: unknown; is_error?: boolean };

export interface Message {
  role: "user" | "assistant";
  content: string | ContentBlock[];
}

export interface MessagesRequest {
  model: string;
  messages: Message[];
  system?: unknown;
  tools?: { name: string }[];
  stream?: boolean;
}

/** One model turn: text and tool calls. A turn with tool calls ends with `tool_use`, else `end_turn`. */
export interface Turn {
  text?: string;
  tools?: { name: string; input: unknown }[];
}

export type Script = (request: MessagesRequest) => Turn;

/** The text of the first user message: the prompt the CLI was started with. */
export function promptOf(request: MessagesRequest): string {
  const first = request.messages.find((m) => m.role === "user");
  if (!first) return "";
  if (typeof first.content === "string") return first.content;
  return first.content
    .filter((b): b is Extract<ContentBlock, { type: "text" }> => b.type === "text")
    .map((b) => b.text)
    .join("\n");
}

/** Tool results so far, in order: how far a scripted sequence has come. */
export function toolResults(request: MessagesRequest): Extract<ContentBlock, { type: "tool_result" }>[] {
  return request.messages.flatMap((m) =>
    m.role === "user" && typeof m.content !== "string"
      ? m.content.filter((b): b is Extract<ContentBlock, { type: "tool_result" }> => b.type === "tool_result")
      : [],
  );
}

/** The text of a tool result (the CLI sends strings or text blocks). */
export function resultText(result: Extract<ContentBlock, { type: "tool_result" }>): string {
  const content = result.content;
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return content.map((c: { text?: string }) => c.text ?? "").join("");
  return "";
}

/** A script that plays `steps` in order (one tool call per turn), then ends with `final`. */
export function sequence(steps: { name: string; input: unknown }[], final: string): Script {
  return (request) => {
    const done = toolResults(request).length;
    if (done < steps.length) return { tools: [steps[done]!] };
    return { text: final };
  };
}

/** Text of the user messages that are prompts (not tool results), in order. */
export function userPrompts(request: MessagesRequest): string[] {
  return request.messages.flatMap((m) => {
    if (m.role !== "user") return [];
    if (typeof m.content === "string") return [m.content];
    const texts = m.content.filter((b): b is Extract<ContentBlock, { type: "text" }> => b.type === "text");
    return m.content.some((b) => b.type === "tool_result") || texts.length === 0
      ? []
      : [texts.map((t) => t.text).join("\n")];
  });
}

/**
 * A script in phases: phase k starts with the k-th prompt that matches `isPhasePrompt` (phase 0 is
 * the opening prompt), and plays its steps one tool call per turn, then its final text. For example
 * a gate feedback message starts the next phase of a resumed session.
 */
export function phased(
  phases: { steps: { name: string; input: unknown }[]; final: string }[],
  isPhasePrompt: (prompt: string) => boolean,
): Script {
  return (request) => {
    const phase = Math.min(userPrompts(request).filter(isPhasePrompt).length, phases.length - 1);
    // Tool results since the phase began: count those after the last phase prompt.
    let results = 0;
    for (let i = request.messages.length - 1; i >= 0; i--) {
      const m = request.messages[i]!;
      if (m.role !== "user") continue;
      const blocks = typeof m.content === "string" ? [{ type: "text", text: m.content }] : m.content;
      if (blocks.some((b) => b.type === "text" && isPhasePrompt((b as { text: string }).text)) && phase > 0)
        break;
      results += blocks.filter((b) => b.type === "tool_result").length;
    }
    const { steps, final } = phases[phase]!;
    return results < steps.length ? { tools: [steps[results]!] } : { text: final };
  };
}

export interface ScriptedModelServer {
  url: string;
  /** Every Messages API request received, for assertions. */
  requests: MessagesRequest[];
  /** The API key (`x-api-key`) or bearer token each request carried. */
  credentials: string[];
  close(): Promise<void>;
}

const usage = (input: number, output: number) => ({
  input_tokens: input,
  output_tokens: output,
  cache_creation_input_tokens: 0,
  cache_read_input_tokens: 0,
});

function blocksOf(turn: Turn, counter: () => number): ContentBlock[] {
  const blocks: ContentBlock[] = [];
  if (turn.text !== undefined) blocks.push({ type: "text", text: turn.text });
  for (const tool of turn.tools ?? [])
    blocks.push({ type: "tool_use", id: `toolu_${counter()}`, name: tool.name, input: tool.input });
  return blocks;
}

function sse(res: ServerResponse, event: string, data: unknown): void {
  res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
}

function stream(res: ServerResponse, id: string, model: string, blocks: ContentBlock[], stop: string): void {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  sse(res, "message_start", {
    type: "message_start",
    message: {
      id,
      type: "message",
      role: "assistant",
      model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: usage(100, 1),
    },
  });
  blocks.forEach((block, index) => {
    if (block.type === "text") {
      sse(res, "content_block_start", {
        type: "content_block_start",
        index,
        content_block: { type: "text", text: "" },
      });
      sse(res, "content_block_delta", {
        type: "content_block_delta",
        index,
        delta: { type: "text_delta", text: block.text },
      });
    } else if (block.type === "tool_use") {
      sse(res, "content_block_start", {
        type: "content_block_start",
        index,
        content_block: { type: "tool_use", id: block.id, name: block.name, input: {} },
      });
      sse(res, "content_block_delta", {
        type: "content_block_delta",
        index,
        delta: { type: "input_json_delta", partial_json: JSON.stringify(block.input) },
      });
    }
    sse(res, "content_block_stop", { type: "content_block_stop", index });
  });
  sse(res, "message_delta", {
    type: "message_delta",
    delta: { stop_reason: stop, stop_sequence: null },
    usage: usage(100, 20),
  });
  sse(res, "message_stop", { type: "message_stop" });
  res.end();
}

async function body(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

const answerJson = (res: ServerResponse, status: number, value: unknown) => {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(value));
};
const apiError = (type: string, message: string) => ({ type: "error", error: { type, message } });

/**
 * Starts the server on a free loopback port. Requests that carry tools are agent turns and go to the
 * script; others (the CLI's housekeeping, such as titles) get a short plain answer. It counts tokens
 * too (`POST /v1/messages/count_tokens`, which the agent check asks with the credential), and with
 * `keys` it refuses every API call that presents another key, as the real API does (401).
 */
export async function startScriptedModel(
  script: Script,
  options: { maxRequests?: number; keys?: string[] } = {},
): Promise<ScriptedModelServer> {
  const requests: MessagesRequest[] = [];
  const credentials: string[] = [];
  let ids = 0;
  const maxRequests = options.maxRequests ?? 500;
  const server: Server = createServer(async (req, res) => {
    try {
      const path = (req.url ?? "/").split("?")[0];
      if (req.method === "HEAD") {
        res.writeHead(200);
        return res.end();
      }
      const presented = String(req.headers["x-api-key"] ?? req.headers.authorization ?? "");
      if (options.keys && !options.keys.includes(presented.replace(/^Bearer /, "")))
        return answerJson(res, 401, apiError("authentication_error", "invalid x-api-key"));
      if (req.method === "POST" && path === "/v1/messages/count_tokens") {
        const counted = JSON.stringify((JSON.parse(await body(req)) as MessagesRequest).messages ?? []);
        return answerJson(res, 200, { input_tokens: Math.ceil(counted.length / 4) });
      }
      if (req.method !== "POST" || path !== "/v1/messages")
        return answerJson(res, 404, apiError("not_found_error", "not found"));
      const request = JSON.parse(await body(req)) as MessagesRequest;
      requests.push(request);
      credentials.push(presented);
      if (requests.length > maxRequests)
        return answerJson(
          res,
          400,
          apiError("invalid_request_error", "scripted model: request budget exhausted"),
        );
      const agentTurn = (request.tools?.length ?? 0) > 0;
      const turn = agentTurn ? script(request) : { text: "Scripted session" };
      const blocks = blocksOf(turn, () => ++ids);
      const stop = blocks.some((b) => b.type === "tool_use") ? "tool_use" : "end_turn";
      const id = `msg_${++ids}`;
      if (request.stream) return stream(res, id, request.model, blocks, stop);
      answerJson(res, 200, {
        id,
        type: "message",
        role: "assistant",
        model: request.model,
        content: blocks,
        stop_reason: stop,
        stop_sequence: null,
        usage: usage(100, 20),
      });
    } catch (error) {
      // A broken script is a test bug: answer 400 (the CLI does not retry it) with the reason.
      answerJson(res, 400, apiError("invalid_request_error", `scripted model: ${String(error)}`));
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    credentials,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
