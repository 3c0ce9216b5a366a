/**
 * The model API as seen from this machine: where it is, and a failure to reach it in words about the
 * user's network (Node's error codes say little to most people; our own credential proxy is no
 * business of theirs). The agent check and the credential proxy both say it this way.
 */

export const ANTHROPIC_API = "https://api.anthropic.com";

/** A network error in words about the network (Node's codes say little to most people). */
export function networkCause(error: Error): string {
  const { code, hostname } = error as NodeJS.ErrnoException & { hostname?: string };
  switch (code) {
    case "ENOTFOUND":
    case "EAI_AGAIN":
      return `the name ${hostname ?? "of the host"} does not resolve (no DNS: is this machine offline?)`;
    case "ECONNREFUSED":
      return "the connection was refused";
    case "ECONNRESET":
      return "the connection was reset";
    case "ETIMEDOUT":
      return "the connection timed out";
    case "ENETUNREACH":
    case "EHOSTUNREACH":
      return "there is no route to it (is this machine offline?)";
  }
  if (code && /CERT|SELF_SIGNED|UNABLE_TO_VERIFY/.test(code))
    return `its TLS certificate is not trusted here (${code}; behind a proxy that inspects TLS, set NODE_EXTRA_CA_CERTS)`;
  return error.message;
}

/** "The model API cannot be reached" in the user's terms: their network, or the URL they set. */
export function modelApiUnreachable(base: string, cause: string): string {
  if (base === ANTHROPIC_API)
    return `the Anthropic API (${new URL(base).host}) cannot be reached from this machine: ${cause}; check your network connection`;
  return `the model API at ${base} (ANTHROPIC_BASE_URL) cannot be reached: ${cause}; check that it is up (or unset ANTHROPIC_BASE_URL)`;
}
