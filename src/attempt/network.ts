/**
 * The model API as seen from this machine: where it is, and what stands in the agent's way, in the
 * user's terms (Node's error codes say little to most people; our own credential proxy is no business
 * of theirs). The agent check and the credential proxy both say it this way: a problem, what to do
 * about it, and then the next command, which the caller knows ("run again", `agentrelay retry ...`).
 */

export const ANTHROPIC_API = "https://api.anthropic.com";

/**
 * Set (to "1") in the agent's environment when its model API is the built-in scripted model
 * (`run --scripted-model`): the user never set ANTHROPIC_BASE_URL, so no message may tell them to.
 */
export const SCRIPTED_MODEL_VARIABLE = "AGENTRELAY_SCRIPTED_MODEL";

/** The model API an agent's environment names. */
export interface ModelApi {
  url: string;
  /** The built-in scripted model, served by this run on loopback. */
  scripted: boolean;
}

export function modelApiOf(env: NodeJS.ProcessEnv): ModelApi {
  return { url: env.ANTHROPIC_BASE_URL || ANTHROPIC_API, scripted: env[SCRIPTED_MODEL_VARIABLE] === "1" };
}

/** Something in the agent's way, and what the user does about it. */
export interface Trouble {
  problem: string;
  fix: string;
}

/** One line: the problem, its fix, then the next command. */
export const sayTrouble = (trouble: Trouble, then: string): string =>
  `${trouble.problem}; ${trouble.fix}, then ${then}`;

/** Why a network request failed, in words about the network, with its own fix when it has one. */
export interface NetworkCause {
  cause: string;
  fix?: string;
}

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|\[::1\]|localhost)$/i;

/** A network error in words about the network; `url` is where the request went. */
export function networkCause(error: Error, url?: string): NetworkCause {
  const { code, hostname } = error as NodeJS.ErrnoException & { hostname?: string };
  const host = url ? new URL(url).hostname : "";
  switch (code) {
    case "ENOTFOUND":
    case "EAI_AGAIN":
      return {
        cause: `the name ${hostname ?? "of the host"} does not resolve (no DNS: is this machine offline?)`,
      };
    case "ECONNREFUSED":
      return { cause: "the connection was refused" };
    case "ECONNRESET":
      return { cause: "the connection was reset" };
    case "ETIMEDOUT":
      return { cause: "the connection timed out" };
    case "ENETUNREACH":
    case "EHOSTUNREACH":
      // No route to a loopback address: the loopback interface is down (a network namespace without `lo`).
      if (LOOPBACK.test(host))
        return {
          cause: `there is no route to ${host}: the loopback interface is down here`,
          fix: "bring it up (`ip link set lo up`)",
        };
      return { cause: "there is no route to it (is this machine offline?)" };
  }
  if (code && /CERT|SELF_SIGNED|UNABLE_TO_VERIFY/.test(code))
    return {
      cause: `its TLS certificate is not trusted here (${code})`,
      fix: "behind a proxy that inspects TLS, set NODE_EXTRA_CA_CERTS",
    };
  return { cause: error.message };
}

/** The model API by the name the user knows it by. */
function named(api: ModelApi): string {
  if (api.scripted) return `the scripted model (--scripted-model, which this run serves at ${api.url})`;
  if (api.url === ANTHROPIC_API) return `the Anthropic API (${new URL(api.url).host})`;
  return `the model API at ${api.url} (ANTHROPIC_BASE_URL)`;
}

/** "The model API cannot be reached", in the user's terms: their network, the URL they set, or neither. */
export function modelApiUnreachable(api: ModelApi, { cause, fix }: NetworkCause): Trouble {
  const where = api.url === ANTHROPIC_API && !api.scripted ? " from this machine" : "";
  const usual = api.scripted
    ? "it is agentrelay's own server on this machine: run again, and report it if it goes on"
    : api.url === ANTHROPIC_API
      ? "check your network connection"
      : "check that it is up (or unset ANTHROPIC_BASE_URL)";
  return { problem: `${named(api)} cannot be reached${where}: ${cause}`, fix: fix ?? usual };
}

/** The model API's refusal of a credential (401, 403), with the API's own words when it gave some. */
export function credentialRefused(api: ModelApi, status: number, said?: string): string {
  const words = said?.replace(/\s+/g, " ").trim().slice(0, 200);
  return `${named(api)} refused the credential (${status}${words ? `: ${words}` : ""})`;
}
