/**
 * The least an attempt is started with: below it an agent cannot do any work (read a file, change it,
 * run the gate, read what the gate said), so an attempt with less would only spend its cap and fail.
 * A budget with less than the floor left is as good as spent: the work waits for `budget +USD`.
 *
 * The default is four realistic turns at the model's list price (US dollars per million tokens). A
 * turn sends Claude Code's system prompt, tool definitions and the conversation so far, about 20,000
 * tokens, at the uncached input price (an attempt starts with a cold prompt cache, and writing the
 * cache costs more than this), and gets about 1,000 tokens back:
 *
 *   Sonnet (Claude Code's default): 20,000 x $3/M + 1,000 x $15/M = $0.075 a turn, $0.30 the floor.
 *   Opus 4.5 and later: $5/M and $25/M, $0.125 a turn, $0.50. Opus 4 and 4.1: $15/M and $75/M, $1.50.
 *   Haiku 4.5: $1/M and $5/M, $0.025 a turn, $0.10. Haiku 3.5: $0.80/M and $4/M, $0.08. Haiku 3: $0.025.
 *
 * A model we do not know (a gateway's name) is priced as Sonnet. `min_attempt_cost_usd` overrides it.
 */
import type { Graph, Task } from "../graph/model.ts";

/** Tokens a realistic turn sends and receives, and how many turns the least useful attempt takes. */
export const TURN = { input: 20_000, output: 1_000, turns: 4 } as const;

/** List prices in US dollars per million tokens, input and output: the first pattern to match wins. */
const PRICES: { model: RegExp; input: number; output: number }[] = [
  { model: /opus-4(-[01])?(-\d{8})?$|opus-4-0|claude-3-opus/, input: 15, output: 75 },
  { model: /opus/, input: 5, output: 25 },
  { model: /3-5-haiku|haiku-3-5/, input: 0.8, output: 4 },
  { model: /claude-3-haiku/, input: 0.25, output: 1.25 },
  { model: /haiku/, input: 1, output: 5 },
  { model: /sonnet/, input: 3, output: 15 },
];
const SONNET = PRICES.at(-1)!;

/** What a realistic turn of `model` costs (null: Claude Code's default model, Sonnet). */
export function turnPriceUsd(model: string | null): number {
  const name = model?.toLowerCase() ?? "";
  const price = PRICES.find((p) => p.model.test(name)) ?? SONNET;
  return (TURN.input * price.input + TURN.output * price.output) / 1e6;
}

/**
 * The floor of an attempt by `agentTask`'s agent: the graph's `min_attempt_cost_usd`, or four turns of
 * its model; never more than the task's own per-attempt limit (its author asked for attempts that small).
 */
export function attemptFloorUsd(graph: Graph, agentTask: Task | null): number {
  const model = agentTask?.primaryAgent.model ?? null;
  const floor = graph.settings.minAttemptCostUsd ?? Math.round(TURN.turns * turnPriceUsd(model) * 1e6) / 1e6;
  const own = agentTask?.maxAttemptCostUsd ?? graph.settings.maxAttemptCostUsd;
  return own === null ? floor : Math.min(floor, own);
}
