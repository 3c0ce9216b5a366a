/**
 * The Anthropic credential stays out of the agent. The runner starts this forwarding proxy on the
 * loopback interface, holding the credential; Claude Code is given only the proxy's address
 * (`ANTHROPIC_BASE_URL`) and a throwaway key made for this attempt. The proxy accepts requests that
 * carry the throwaway key and forwards them upstream with the real credential in its place, so a
 * prompt-injected agent that prints its environment or reads its home finds nothing worth taking.
 *
 * It forwards only to the upstream fixed when it starts, and only the model API's calls
 * (model-api-calls.ts): whatever a request names, the credential goes nowhere else.
 */
import { randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, request as httpRequest, type ServerResponse } from "node:http";
import { request as httpsRequest } from "node:https";
import type { AddressInfo, Socket } from "node:net";
import { authHeaders, type Credential, CredentialError } from "./credential.ts";
import { type Micros, usd } from "../graph/amount.ts";
import { modelApiCall, upstreamUrl } from "./model-api-calls.ts";
import { type CallAsked, callAsked, isUsage, StreamMeter, usageMicros, worstMicros } from "./model-meter.ts";
import {
  ANTHROPIC_API,
  credentialRefused,
  type ModelApi,
  modelApiUnreachable,
  type NetworkCause,
  networkCause,
  type Trouble,
} from "./network.ts";

const HOP_BY_HOP = new Set([
  "host",
  "connection",
  "keep-alive",
  "transfer-encoding",
  "upgrade",
  "proxy-authorization",
  "x-api-key",
  "authorization",
  "accept-encoding",
]);

/** At most this many metered calls at once, so that calls started together overrun a budget by little. */
export const MAX_CALLS_AT_ONCE = 4;
/** The longest answer that is not streamed which the proxy reads to meter it (the API's are far shorter). */
const MAX_WHOLE_ANSWER = 64 * 1024 * 1024;

export interface CredentialProxy {
  /** The address Claude Code is given as ANTHROPIC_BASE_URL. */
  url: string;
  /** The throwaway key Claude Code is given as ANTHROPIC_API_KEY. */
  key: string;
  /** What the calls through the proxy cost, metered from their answers, rounded up to a micro-dollar. */
  spentMicros(): Micros;
  close(): Promise<void>;
}

/** How long the model API may stay unreachable (no answer to any request) before the agent is stopped. */
export const UNREACHABLE_GRACE_MS = 10_000;

/**
 * How long a request the model API accepted may go without a byte of its answer before it counts as
 * unanswered (then the grace above runs, so a silent API stops the agent within 100 s). Claude Code's
 * calls stream: a long answer arrives as it is written, and while the model thinks, the API sends a
 * `ping` event every 15 to 30 s (as those who watch the stream report; the API promises pings, not
 * their rate), so 90 s of silence is three missed pings. Claude Code's own watchdog waits 180 to 300 s.
 */
export const SILENCE_MS = 90_000;

export interface CredentialProxyOptions {
  /** The model API's URL (default: Anthropic's). */
  upstream?: string;
  /** The upstream is the built-in scripted model (messages then name it so). */
  scripted?: boolean;
  /**
   * Hears, once, what stops the agent: at once a credential that cannot be used (a login that
   * expired, an upstream 401 or 403), and a model API unreachable for `graceMs` (a network that
   * dropped, or a request left unanswered for `silenceMs`). Claude Code itself would retry for
   * minutes before saying so, and then in words about this proxy ("check your inference gateway")
   * rather than about the user's network.
   */
  onStop?: (trouble: Trouble) => void;
  /** What fixes a credential the API refuses, in the host's words ("set ANTHROPIC_API_KEY to ..."). */
  fixCredential?: string;
  graceMs?: number;
  silenceMs?: number;
  /** What the calls through the proxy may spend (null: no limit); past it no call is made. */
  capMicros?: Micros | null;
  /** The runner's log: requests refused here. */
  log?: (line: string) => void;
}

/** An error answer in the Messages API's shape, which Claude Code shows as it is. */
function answerError(res: ServerResponse, status: number, type: string, message: string): void {
  // An answer already under way cannot turn into an error: cut it, and the client sees it end short.
  if (res.headersSent) return void res.destroy();
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify({ type: "error", error: { type, message } }));
}

function jsonOf(body: Buffer): { model?: unknown; usage?: unknown } | null {
  try {
    return JSON.parse(body.toString("utf8")) as { model?: unknown; usage?: unknown };
  } catch {
    return null;
  }
}

export async function startCredentialProxy(
  credential: Credential,
  options: CredentialProxyOptions = {},
): Promise<CredentialProxy> {
  const key = `sk-ant-agentrelay-${randomBytes(24).toString("hex")}`;
  const upstream = new URL(options.upstream ?? ANTHROPIC_API);
  const api: ModelApi = { url: options.upstream ?? ANTHROPIC_API, scripted: options.scripted ?? false };
  const graceMs = options.graceMs ?? UNREACHABLE_GRACE_MS;
  const silenceMs = options.silenceMs ?? SILENCE_MS;
  const log = options.log ?? (() => {});
  const capMicros = options.capMicros ?? null;
  let spent = 0;
  let inFlight = 0;
  const spentMicros = () => Math.max(0, Math.ceil(spent - 1e-6));
  let stopped = false;
  const stop = (trouble: Trouble) => {
    if (stopped) return;
    stopped = true;
    options.onStop?.(trouble);
  };
  // Unreachable since the first failure with no answer after it; a blip shorter than the grace is ridden out.
  let unreachableTimer: NodeJS.Timeout | undefined;
  let lastCause: NetworkCause = { cause: "" };
  const reached = () => {
    clearTimeout(unreachableTimer);
    unreachableTimer = undefined;
  };
  const failed = (cause: NetworkCause) => {
    lastCause = cause;
    unreachableTimer ??= setTimeout(() => stop(modelApiUnreachable(api, lastCause)), graceMs);
  };
  const refusedCredential = (status: number, said?: string) =>
    stop({
      problem: `Claude Code could not authenticate: ${credentialRefused(api, status, said)}`,
      fix: options.fixCredential ?? "replace the credential",
    });

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const presented = req.headers["x-api-key"] ?? req.headers.authorization?.replace(/^Bearer /, "");
    if (presented !== key) return answerError(res, 401, "authentication_error", "unknown key");
    const call = modelApiCall(req.method, req.url);
    if (!call.ok) {
      log(`credential proxy: refused ${req.method} ${JSON.stringify(req.url?.slice(0, 200))}`);
      req.resume();
      return answerError(
        res,
        call.status,
        call.status === 400 ? "invalid_request_error" : "not_found_error",
        call.message,
      );
    }
    let auth: Record<string, string>;
    try {
      auth = authHeaders(credential, req.headers["anthropic-beta"]);
    } catch (error) {
      if (!(error instanceof CredentialError)) throw error;
      answerError(res, 401, "authentication_error", error.trouble.problem);
      return stop({
        ...error.trouble,
        problem: `Claude Code could not authenticate: ${error.trouble.problem}`,
      });
    }
    const headers: Record<string, string | string[]> = {};
    for (const [name, value] of Object.entries(req.headers))
      if (value !== undefined && !HOP_BY_HOP.has(name)) headers[name] = value;
    Object.assign(headers, auth);
    // An answer the proxy meters must be readable as it comes: not compressed.
    headers["accept-encoding"] = "identity";
    const target = upstreamUrl(upstream, call);
    const send = target.protocol === "https:" ? httpsRequest : httpRequest;
    // A call that the API bills (a message) is metered from its answer; the others cost nothing.
    const metered = req.method === "POST" && call.path === "/v1/messages";
    if (metered) {
      if (capMicros !== null && spent >= capMicros) {
        log(`credential proxy: refused a model call: the budget of ${usd(capMicros)} is spent`);
        req.resume();
        return answerError(
          res,
          400,
          "invalid_request_error",
          `agentrelay's credential proxy: this attempt's budget of ${usd(capMicros)} is spent (${usd(spentMicros())} metered), so no further model call is made`,
        );
      }
      if (inFlight >= MAX_CALLS_AT_ONCE) {
        req.resume();
        res.setHeader("retry-after", "1");
        return answerError(
          res,
          429,
          "rate_limit_error",
          `agentrelay's credential proxy: at most ${MAX_CALLS_AT_ONCE} model calls at once`,
        );
      }
      inFlight++;
      res.on("close", () => inFlight--);
    }
    // Silence: no byte either way (the request's upload, the answer) for `silenceMs` is no answer.
    let silence: NodeJS.Timeout | undefined;
    // Ended here (silent, or the agent went away): the request's own error is no news then.
    let ended = false;
    const quiet = () => {
      clearTimeout(silence);
      silence = setTimeout(() => {
        ended = true;
        out.destroy();
        const cause = {
          cause: `it sent nothing for ${Math.round(silenceMs / 1000)} s after taking a request`,
        };
        failed(cause);
        answerError(res, 504, "api_error", modelApiUnreachable(api, cause).problem);
      }, silenceMs);
    };
    const requestBody: Buffer[] = [];
    let asked: CallAsked = { model: null, maxTokens: 0 };
    // What the metered answer is charged once it is read (or, cut short, the most it could cost).
    let charged = false;
    let sent = false;
    const charge = (micros: number) => {
      if (charged) return;
      charged = true;
      spent += micros;
    };
    const unmeterable = (why: string) => {
      log(`credential proxy: refused an answer it cannot meter (${why})`);
      out.destroy();
      ended = true;
      answerError(
        res,
        502,
        "api_error",
        `agentrelay's credential proxy: the model API's answer cannot be metered (${why}), so it is not passed on`,
      );
    };
    const out = send(target, { method: req.method, headers }, (answer) => {
      reached();
      quiet();
      answer.on("data", quiet);
      answer.on("end", () => clearTimeout(silence));
      answer.on("error", () => res.destroy());
      // The API bills successful messages only: an error answer costs nothing.
      if (answer.statusCode !== 200) charge(0);
      if (answer.statusCode === 401 || answer.statusCode === 403) {
        res.writeHead(answer.statusCode, answer.headers);
        let body = "";
        answer.setEncoding("utf8");
        answer.on("data", (chunk: string) => (body += chunk.slice(0, 4096)));
        answer.on("end", () => {
          let said: string | undefined;
          try {
            said = (JSON.parse(body) as { error?: { message?: string } }).error?.message;
          } catch {
            // not JSON: the status says enough
          }
          refusedCredential(answer.statusCode!, said);
          res.end(body);
        });
        return;
      }
      // An error answer passes as it is.
      if (!metered || answer.statusCode !== 200) {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        return void answer.pipe(res);
      }
      const encoding = String(answer.headers["content-encoding"] ?? "identity").toLowerCase();
      if (encoding !== "identity") return unmeterable(`it is encoded as ${encoding}`);
      const type = String(answer.headers["content-type"] ?? "");
      if (type.includes("text/event-stream")) return meterStream(answer);
      if (type.includes("application/json")) return meterWhole(answer);
      return unmeterable(`its content type is ${JSON.stringify(type.slice(0, 100))}`);
    });
    /** A whole answer: read to its end, charged from its usage, then passed on. */
    const meterWhole = (answer: IncomingMessage) => {
      const chunks: Buffer[] = [];
      let size = 0;
      answer.on("data", (chunk: Buffer) => {
        size += chunk.length;
        if (size > MAX_WHOLE_ANSWER) return unmeterable("it is too long to read");
        chunks.push(chunk);
      });
      answer.on("end", () => {
        if (ended) return;
        const body = Buffer.concat(chunks);
        const value = jsonOf(body);
        if (!isUsage(value?.usage)) return unmeterable("it says no usage");
        charge(usageMicros(typeof value.model === "string" ? value.model : asked.model, value.usage));
        const passed = { ...answer.headers, "content-length": String(body.length) };
        delete passed["transfer-encoding"];
        res.writeHead(200, passed);
        res.end(body);
      });
    };
    /** A streamed answer: its first event must say its usage; it passes on as it comes, metered. */
    const meterStream = (answer: IncomingMessage) => {
      const meter = new StreamMeter();
      const held: Buffer[] = [];
      let started = false;
      answer.on("data", (chunk: Buffer) => {
        if (ended) return;
        if (started) return void res.write(chunk);
        held.push(chunk);
        if (!meter.feed(chunk)) return;
        if (meter.unmeterable) return unmeterable("its stream does not start with its usage");
        started = true;
        res.writeHead(200, answer.headers);
        for (const piece of held) res.write(piece);
        // The rest is only read, for the final usage: what passes on is the bytes as they came.
        answer.on("data", (more: Buffer) => meter.feed(more));
      });
      const settle = () => {
        if (!started) return;
        const model = meter.model ?? asked.model;
        charge(meter.final ? usageMicros(model, meter.usage!) : worstMicros(model, meter.usage!, asked));
      };
      answer.on("end", () => {
        if (ended) return;
        if (!started) return unmeterable("its stream ended before its usage");
        settle();
        res.end();
      });
      answer.on("close", settle);
    };
    quiet();
    res.on("close", () => {
      clearTimeout(silence);
      // A metered call sent upstream and not charged from its usage (no answer, an answer cut or refused)
      // may still have been billed: it is charged the most it could have cost, the body's bytes as tokens.
      if (sent && !charged) {
        const inputTokens = requestBody.reduce((n, chunk) => n + chunk.length, 0);
        charge(worstMicros(asked.model, { input_tokens: inputTokens, output_tokens: 0 }, asked));
      }
      if (res.writableFinished) return;
      ended = true;
      out.destroy();
    });
    out.on("error", (error) => {
      clearTimeout(silence);
      if (ended) return;
      const cause = networkCause(error, api.url);
      failed(cause);
      answerError(res, 502, "api_error", modelApiUnreachable(api, cause).problem);
    });
    if (!metered) {
      req.on("data", quiet);
      return void req.pipe(out);
    }
    // A metered request is read whole first: its model and max_tokens bound what its answer may cost.
    req.on("data", (chunk: Buffer) => {
      quiet();
      requestBody.push(chunk);
    });
    req.on("end", () => {
      const body = Buffer.concat(requestBody);
      asked = callAsked(body);
      out.setHeader("content-length", String(body.length));
      sent = true;
      out.end(body);
    });
  });
  // A CONNECT (a tunnel to any host) is no call of the model API: refused, nothing forwarded.
  server.on("connect", (req: IncomingMessage, socket: Socket) => {
    log(`credential proxy: refused CONNECT ${JSON.stringify(req.url?.slice(0, 200))}`);
    const body = JSON.stringify({
      type: "error",
      error: { type: "invalid_request_error", message: "agentrelay's credential proxy: CONNECT is refused" },
    });
    socket.on("error", () => {});
    socket.end(
      `HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
    );
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    key,
    spentMicros,
    close: () =>
      new Promise((resolve) => {
        clearTimeout(unreachableTimer);
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
