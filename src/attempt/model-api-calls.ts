/**
 * What the credential proxy forwards with the real credential: the model API's calls that Claude
 * Code makes, on the one upstream origin fixed when the proxy started, and nothing else. A request
 * contributes a path and a query only, never a host: a request target that is not a plain path
 * (`//HOST/x`, which a URL resolver takes as another host; `http://HOST/x`, the absolute form a
 * proxy request carries; `*`; CONNECT) is refused with 400, and a path that is not one of these calls
 * with 404, before anything is sent upstream.
 *
 * The calls: Claude Code sends `HEAD /` first (is the API there), then `POST /v1/messages?beta=true`
 * for every turn (seen with the real CLI against a recording server); `count_tokens` and the models
 * list are in its client, for context sizes and gateways. The agent is given an API key (the proxy's
 * throwaway one) whatever the real credential is, so Claude Code never makes the OAuth account calls
 * (`/api/oauth/...`) through the proxy. Everything else the credential could do (files, batches, an
 * organisation's administration) is out of the agent's reach.
 */

const CALLS: { method: string; path: RegExp }[] = [
  { method: "HEAD", path: /^\/$/ },
  { method: "GET", path: /^\/$/ },
  { method: "POST", path: /^\/v1\/messages$/ },
  { method: "POST", path: /^\/v1\/messages\/count_tokens$/ },
  { method: "GET", path: /^\/v1\/models$/ },
  { method: "GET", path: /^\/v1\/models\/[A-Za-z0-9][A-Za-z0-9._@:-]*$/ },
];

/** What the proxy does with a request: forward it to this path and query, or refuse it. */
export type ModelApiCall =
  { ok: true; path: string; query: string } | { ok: false; status: 400 | 404; message: string };

const refuse = (status: 400 | 404, message: string): ModelApiCall => ({
  ok: false,
  status,
  message: `agentrelay's credential proxy: ${message}`,
});

/** The call a request is (`target` as the request line has it), or why it is refused. */
export function modelApiCall(method: string | undefined, target: string | undefined): ModelApiCall {
  const shown = JSON.stringify((target ?? "").slice(0, 200));
  // Origin form only (RFC 9112, 3.2.1): a path from the root, then an optional query.
  if (!target?.startsWith("/") || target.startsWith("//") || /[\\#\s]/.test(target))
    return refuse(400, `the request target ${shown} is not a path of the model API (such as /v1/messages)`);
  const at = target.indexOf("?");
  const path = at === -1 ? target : target.slice(0, at);
  const query = at === -1 ? "" : target.slice(at);
  if (!CALLS.some((call) => call.method === method && call.path.test(path)))
    return refuse(
      404,
      `${method ?? "?"} ${JSON.stringify(path.slice(0, 200))} is not a call of the model API that Claude Code makes, so it is not forwarded`,
    );
  return { ok: true, path, query };
}

/** The upstream URL of a call: the upstream's origin and base path, fixed when the proxy started. */
export function upstreamUrl(upstream: URL, call: Extract<ModelApiCall, { ok: true }>): URL {
  const url = new URL(upstream.origin);
  url.pathname = `${upstream.pathname.replace(/\/$/, "")}${call.path}`;
  url.search = call.query;
  // Setting a path and a query cannot move a URL to another origin; this says so where it matters.
  if (url.origin !== upstream.origin) throw new Error(`the model API call left ${upstream.origin}`);
  return url;
}
