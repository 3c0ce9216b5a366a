/**
 * The egress allowlist's language: which hosts a pattern names, and whether a host and port are on a
 * list. A pattern is a host name or address (`registry.npmjs.org`, `10.0.0.7`), or `*.` and a domain
 * for its subdomains (`*.pythonhosted.org`), either followed by `:port`; `*` alone allows everything.
 */

/** The pattern that turns the allowlist off. */
export const ANY_HOST = "*";

const LABEL = "[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?";
const PORT = "(?:6553[0-5]|655[0-2]\\d|65[0-4]\\d{2}|6[0-4]\\d{3}|[1-5]\\d{4}|[1-9]\\d{0,3})";
/** Every valid pattern, as one regular expression (the graph's JSON Schema carries it). */
export const HOST_PATTERN = `^(?:\\*|(?:(?:\\*\\.)?${LABEL}(?:\\.${LABEL})*|\\[[0-9A-Fa-f:.]+\\])(?::${PORT})?)$`;
const VALID = new RegExp(HOST_PATTERN);

/** Why a pattern cannot be used, or null when it can. */
export function hostPatternProblem(pattern: string): string | null {
  if (VALID.test(pattern)) return null;
  const { host, port } = splitPort(pattern);
  if (port !== null && !(port > 0 && port < 65_536)) return `'${pattern}' has an invalid port (1-65535)`;
  if (host.slice(host.startsWith("*.") ? 2 : 0).includes("*"))
    return `'${pattern}': a wildcard may only open the pattern, as in *.example.com`;
  return `'${pattern}' is not a host name, an address or *.domain (with an optional :port)`;
}

function isIPv6(host: string): boolean {
  return /^\[[0-9a-f:.]+\]$/i.test(host);
}

/** `host:port` into its parts; an IPv6 address is written in brackets (`[::1]:8080`). */
function splitPort(pattern: string): { host: string; port: number | null } {
  const match = /^(.*?)(?::(\d+))?$/.exec(pattern)!;
  const host = match[1]!;
  if (host.includes(":") && !isIPv6(host)) return { host: pattern, port: null };
  return { host, port: match[2] === undefined ? null : Number(match[2]) };
}

/**
 * True when the list names `host` at `port` (any port when null); host names compare without case
 * and a trailing dot.
 */
export function allowsHost(allow: readonly string[], host: string, port: number | null): boolean {
  const wanted = normalise(host);
  return allow.some((pattern) => {
    if (pattern === ANY_HOST) return true;
    const rule = splitPort(pattern);
    if (rule.port !== null && port !== null && rule.port !== port) return false;
    const name = normalise(rule.host);
    return name.startsWith("*.") ? wanted.endsWith(name.slice(1)) : wanted === name;
  });
}

function normalise(host: string): string {
  const bare = host.startsWith("[") && host.endsWith("]") ? host.slice(1, -1) : host;
  return bare.toLowerCase().replace(/\.$/, "");
}

/** True when the list turns the allowlist off. */
export const allowsEverything = (allow: readonly string[]): boolean => allow.includes(ANY_HOST);
