/**
 * What a model call cost, read from the answer's own usage, as the credential proxy meters every call
 * that goes through it: Claude Code's turns, and any other (a gate's or the agent's own `curl` with the
 * throwaway key), which Claude Code's `total_cost_usd` never counts.
 *
 * Priced as Anthropic prices usage (https://docs.anthropic.com/en/docs/about-claude/pricing): input and
 * output at the model's list price (attempt-floor.ts), cache writes at 1.25 times the input price (2
 * times for the one-hour cache), cache reads at 0.1 times, and $10 per thousand web searches.
 *
 * A streamed answer says its input in `message_start` and its output, counted to the end, in the last
 * `message_delta`. A stream that ends without that last count (cut, or the client went away) is
 * charged the most it could have cost: its input and the request's `max_tokens` of output.
 */
import { modelPrices } from "../graph/attempt-floor.ts";

export interface Usage {
  input_tokens?: number;
  output_tokens?: number;
  cache_creation_input_tokens?: number | null;
  cache_read_input_tokens?: number | null;
  cache_creation?: { ephemeral_5m_input_tokens?: number; ephemeral_1h_input_tokens?: number } | null;
  server_tool_use?: { web_search_requests?: number } | null;
}

/** What a request asks for that bounds its cost: its model and the most output it may get. */
export interface CallAsked {
  model: string | null;
  maxTokens: number;
}

/** The output a request may get when it does not say (the most any current model writes). */
const DEFAULT_MAX_TOKENS = 128_000;
const WEB_SEARCH_MICROS = 10_000;

const count = (value: unknown): number =>
  typeof value === "number" && Number.isFinite(value) && value > 0 ? value : 0;

/** The model and `max_tokens` a Messages API request body names (a body that is not JSON: the most). */
export function callAsked(body: Buffer): CallAsked {
  try {
    const value = JSON.parse(body.toString("utf8")) as { model?: unknown; max_tokens?: unknown };
    return {
      model: typeof value.model === "string" ? value.model : null,
      maxTokens: count(value.max_tokens) || DEFAULT_MAX_TOKENS,
    };
  } catch {
    return { model: null, maxTokens: DEFAULT_MAX_TOKENS };
  }
}

/** A usage the API reports: input and output counted as numbers. */
export function isUsage(value: unknown): value is Usage {
  if (value === null || typeof value !== "object") return false;
  const usage = value as Usage;
  return typeof usage.input_tokens === "number" && typeof usage.output_tokens === "number";
}

/** What `usage` of `model` costs, in micro-dollars (fractional: the proxy rounds its total up). */
export function usageMicros(model: string | null, usage: Usage): number {
  const price = modelPrices(model);
  const input = price.input / 1000;
  const split = usage.cache_creation;
  const writes =
    split && (split.ephemeral_5m_input_tokens !== undefined || split.ephemeral_1h_input_tokens !== undefined)
      ? count(split.ephemeral_5m_input_tokens) * 1.25 + count(split.ephemeral_1h_input_tokens) * 2
      : count(usage.cache_creation_input_tokens) * 1.25;
  return (
    count(usage.input_tokens) * input +
    writes * input +
    count(usage.cache_read_input_tokens) * input * 0.1 +
    (count(usage.output_tokens) * price.output) / 1000 +
    count(usage.server_tool_use?.web_search_requests) * WEB_SEARCH_MICROS
  );
}

/** The most a call could cost once its input is known: that input, and all the output it asked for. */
export function worstMicros(model: string | null, usage: Usage, asked: CallAsked): number {
  return usageMicros(model, {
    ...usage,
    output_tokens: Math.max(count(usage.output_tokens), asked.maxTokens),
  });
}

/**
 * Reads a Messages API event stream as it passes: the usage `message_start` gives, then each
 * `message_delta`'s (whose counts run to the end of the answer).
 */
export class StreamMeter {
  model: string | null = null;
  usage: Usage | null = null;
  /** A `message_delta` with usage came: the output is counted to the end. */
  final = false;
  /** The stream's first event was not a `message_start` with usage: it cannot be metered. */
  unmeterable = false;
  private pending = "";

  /** Events read from `chunk`; returns whether the first event has been read (metered or not). */
  feed(chunk: Buffer): boolean {
    this.pending += chunk.toString("utf8");
    for (let end = this.pending.search(/\r?\n\r?\n/); end !== -1; end = this.pending.search(/\r?\n\r?\n/)) {
      const event = this.pending.slice(0, end);
      this.pending = this.pending.slice(end).replace(/^\r?\n\r?\n/, "");
      this.read(event);
    }
    // A first event too long to be a message_start is not one.
    if (this.usage === null && this.pending.length > 1_000_000) this.unmeterable = true;
    return this.usage !== null || this.unmeterable;
  }

  private read(event: string): void {
    const data = event
      .split(/\r?\n/)
      .filter((line) => line.startsWith("data:"))
      .map((line) => line.slice(5).trimStart())
      .join("\n");
    if (!data) return;
    let value: { type?: string; message?: { model?: unknown; usage?: unknown }; usage?: unknown };
    try {
      value = JSON.parse(data) as typeof value;
    } catch {
      if (this.usage === null) this.unmeterable = true;
      return;
    }
    if (this.usage === null) {
      if (value.type === "message_start" && isUsage(value.message?.usage)) {
        this.usage = { ...value.message.usage };
        this.model = typeof value.message.model === "string" ? value.message.model : null;
      } else if (value.type !== "ping") this.unmeterable = true;
      return;
    }
    if (value.type === "message_delta" && value.usage && typeof value.usage === "object") {
      for (const [name, n] of Object.entries(value.usage as Record<string, unknown>))
        if (n !== null && n !== undefined) (this.usage as Record<string, unknown>)[name] = n;
      this.final = typeof (value.usage as Usage).output_tokens === "number";
    }
  }
}
