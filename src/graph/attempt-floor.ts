/**
 * The least an attempt is started with: below it an agent cannot do any work (read a file, change it,
 * run the gate, read what the gate said), so an attempt with less would only spend its cap and fail.
 * A budget with less than the floor left is as good as spent: the work waits for `budget +USD`. A
 * graph whose budget or per-attempt limit is below the floor of an attempt it pays for could never
 * start that attempt: it is refused when it is validated (budget-rules.ts).
 *
 * The default is four realistic turns at the model's list price. A turn sends Claude Code's system
 * prompt, tool definitions and the conversation so far, about 20,000 tokens, at the uncached input
 * price (an attempt starts with a cold prompt cache, and writing the cache costs more than this), and
 * gets about 1,000 tokens back:
 *
 *   Sonnet (Claude Code's default): 20,000 x $3/M + 1,000 x $15/M = $0.075 a turn, $0.30 the floor.
 *   Opus 4.5 and later: $5/M and $25/M, $0.125 a turn, $0.50. Opus 4 and 4.1: $15/M and $75/M, $1.50.
 *   Haiku 4.5: $1/M and $5/M, $0.025 a turn, $0.10. Haiku 3.5: $0.80/M and $4/M, $0.08. Haiku 3: $0.025.
 *
 * A model we do not know (a gateway's name) is priced as Sonnet. `min_attempt_cost_usd` overrides it.
 */
import type { Micros } from "./amount.ts";
import type { Graph, Task } from "./model.ts";

/** Thousands of tokens a realistic turn sends and receives, and how many turns the least useful attempt takes. */
export const TURN = { inputThousands: 20, outputThousands: 1, turns: 4 } as const;

/**
 * List prices, input and output, in micro-dollars per thousand tokens ($3 per million tokens is 3,000
 * micro-dollars per thousand): the first pattern to match wins. Integers, so that a floor is exact.
 */
const PRICES: { model: RegExp; input: number; output: number }[] = [
  { model: /opus-4(-[01])?(-\d{8})?$|opus-4-0|claude-3-opus/, input: 15_000, output: 75_000 },
  { model: /opus/, input: 5_000, output: 25_000 },
  { model: /3-5-haiku|haiku-3-5/, input: 800, output: 4_000 },
  { model: /claude-3-haiku/, input: 250, output: 1_250 },
  { model: /haiku/, input: 1_000, output: 5_000 },
  { model: /sonnet/, input: 3_000, output: 15_000 },
];
const SONNET = PRICES.at(-1)!;

/** The list prices of `model` (an unknown one is priced as Sonnet), micro-dollars per thousand tokens. */
export function modelPrices(model: string | null): { input: number; output: number } {
  const name = model?.toLowerCase() ?? "";
  return PRICES.find((p) => p.model.test(name)) ?? SONNET;
}

/** What a realistic turn of `model` costs (null: Claude Code's default model, Sonnet). */
export function turnPriceMicros(model: string | null): Micros {
  const price = modelPrices(model);
  return TURN.inputThousands * price.input + TURN.outputThousands * price.output;
}

/** The floor of an attempt by `agentTask`'s agent: the graph's `min_attempt_cost_usd`, or four turns of its model. */
export function attemptFloorMicros(graph: Graph, agentTask: Task | null): Micros {
  return (
    graph.settings.minAttemptCostMicros ?? TURN.turns * turnPriceMicros(agentTask?.primaryAgent.model ?? null)
  );
}

/** Where a floor comes from, in words: "min_attempt_cost_usd", "four turns of claude-opus-4-1". */
export function floorSource(graph: Graph, agentTask: Task | null): string {
  if (graph.settings.minAttemptCostMicros !== null) return "min_attempt_cost_usd";
  return `four turns of ${agentTask?.primaryAgent.model ?? "Claude Code's default model, Sonnet"}`;
}
