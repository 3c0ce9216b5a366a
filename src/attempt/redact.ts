/**
 * Redaction of secrets in everything that leaves an attempt (log lines, summaries, concerns, reasons):
 * the exact values the job holds, and anything shaped like a credential. GitHub's stateless
 * installation tokens (`ghs_<app id>_<JWT>`, hundreds of characters with `.`, `_` and `-`) are
 * covered as well as the classic 40-character forms.
 */
const PATTERNS: RegExp[] = [
  /\bgh[pousr]_[A-Za-z0-9._-]{36,}/g, // GitHub tokens, classic and stateless formats
  /\bgithub_pat_[A-Za-z0-9_]{22,}/g, // fine-grained personal access tokens
  /\bsk-ant-[A-Za-z0-9_-]{8,}/g, // Anthropic API keys and OAuth tokens
  /\beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}/g, // JWTs (OIDC tokens)
];

export const REDACTED = "***";

/** A function that masks `secrets` (exact values, longest first) and credential-shaped text. */
export function redactor(secrets: readonly (string | undefined)[]): (text: string) => string {
  const exact = [...new Set(secrets.filter((s): s is string => typeof s === "string" && s.length >= 6))].sort(
    (a, b) => b.length - a.length,
  );
  return (text) => {
    let out = text;
    for (const secret of exact) out = out.split(secret).join(REDACTED);
    for (const pattern of PATTERNS) out = out.replace(pattern, REDACTED);
    return out;
  };
}

/** Whether a variable holds a secret, by its name (credentials, tokens, keys). */
export const isSecretName = (name: string): boolean =>
  /TOKEN|SECRET|KEY|PASSWORD|CREDENTIAL/i.test(name) && name !== "ANTHROPIC_BASE_URL";

/** The values in an environment that are secrets: credentials and tokens by name. */
export function secretValues(env: NodeJS.ProcessEnv): string[] {
  return Object.entries(env)
    .filter(([name]) => isSecretName(name))
    .map(([, value]) => value ?? "");
}

const scrub = redactor([]);

/**
 * Agent text inside markdown, for people and for other agents alike: secrets masked, HTML comments
 * and fences neutralised (it cannot close the block it is shown in), @-mentions kept from notifying
 * anyone (a zero-width space after the @), length bounded.
 */
export function agentText(text: string, max = 4000): string {
  const clean = scrub(text)
    .replace(/<!--|-->/g, "")
    .replace(/```/g, "ʼʼʼ")
    .replace(/@(?=[A-Za-z0-9])/g, "@\u200b");
  return cut(clean, max);
}

/**
 * `text` within `max` characters: when longer, cut at the last word boundary (a single word longer
 * than half of `max` is cut inside) and marked with " …".
 */
export function cut(text: string, max: number): string {
  if (text.length <= max) return text;
  const room = text.slice(0, Math.max(0, max - 2));
  const boundary = room.search(/\s\S*$/);
  return `${(boundary > max / 2 ? room.slice(0, boundary) : room).trimEnd()} …`;
}

/**
 * `text` within `max` characters, cut where a clause ends (before ": ", "; ", ". " or " (" outside
 * code and parentheses), never inside a list or a code span, and marked with " …": what a line says
 * first (what to do) stays whole, what it cannot hold goes whole. A first clause longer than `max` is
 * cut at a word, outside code; so is a text whose clauses within `max` end before `least` characters
 * (what they keep would say less than a cut at a word).
 */
export function cutClauses(text: string, max: number, least = 0): string {
  if (text.length <= max) return text;
  let depth = 0;
  let inCode = false;
  let end = -1;
  for (let i = 0; i + 2 <= max - 2 && i < text.length; i++) {
    const ch = text[i]!;
    if (ch === "`") inCode = !inCode;
    if (inCode) continue;
    if (ch === "(") depth++;
    if (ch === ")") depth = Math.max(0, depth - 1);
    if (depth > 0) continue;
    const two = text.slice(i, i + 2);
    if (two === ": " || two === "; " || two === ". ") end = i + (two === ". " ? 1 : 0);
    else if (two === " (") end = i;
  }
  if (end > Math.max(0, least)) return `${text.slice(0, end)} …`;
  const word = cut(text, max);
  const ticks = (word.match(/`/g) ?? []).length;
  return ticks % 2 === 0 ? word : `${word.slice(0, word.lastIndexOf("`")).trimEnd()} …`;
}

/**
 * An agent's words as GitHub shows them in a commit that lands on the target or in a PR body we write:
 * no working mention (`@user`), issue reference (`#1`) or closing keyword (`Closes #1`,
 * `fixes https://.../issues/1`), each broken by a zero-width space, so that the agent's words notify
 * and close nothing when the commit lands or the PR merges.
 * https://docs.github.com/en/issues/tracking-your-work-with-issues/using-issues/linking-a-pull-request-to-an-issue
 */
export function inertOnGitHub(text: string): string {
  return text
    .replace(/@(?=[A-Za-z0-9])/g, "@\u200b")
    .replace(/#(?=\d)/g, "#\u200b")
    .replace(/\b(close[sd]?|fix(?:e[sd])?|resolve[sd]?)(?=:?\s+\S*(?:#|\/issues\/|\/pull\/))/gi, "$1\u200b");
}
