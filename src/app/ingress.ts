/**
 * The webhook endpoint, in front of Probot's handlers: a body is capped before it is read (GitHub
 * sends at most 25 MB), its signature is checked over the raw bytes before anything of it is
 * logged or parsed, and a signed payload the handlers cannot read is answered 400 with the field at
 * fault. Each delivery is logged as one line. The handlers run through Probot (`probot.receive`).
 */
import { AsyncLocalStorage } from "node:async_hooks";
import type { IncomingMessage, ServerResponse } from "node:http";
import { verifyWithFallback } from "@octokit/webhooks-methods";
import type { Probot } from "probot";
import { payloadProblem } from "./payloads.ts";

/** GitHub does not deliver events over 25 MB. */
export const MAX_WEBHOOK_BYTES = 25 * 1024 * 1024;
/** GitHub waits 10 s for an answer; a slower handler goes on after a 202. */
const ANSWER_WITHIN_MS = 9_000;

export interface IngressOptions {
  path: string;
  secret: string;
  /** Secrets still accepted while the webhook secret is being rotated (WEBHOOK_SECRET_PREVIOUS). */
  previousSecrets?: string[];
  log: (line: string) => void;
  maxBytes?: number;
  /**
   * How long a delivery waits for its handler before it is answered 202 and the handler goes on
   * (ANSWER_WITHIN_MS, within GitHub's 10 s). The tests' harnesses wait as long as the handler
   * takes, so that a busy machine makes their deliveries slower, not answered before their work is done.
   */
  answerWithinMs?: number;
}

/**
 * How a handler that could not do what its event asks, and said why, ends its delivery: the answer's
 * status and one line, logged with the delivery (a damaged run: said on its issue, 200; GitHub's write
 * limit spent: 503, and the reconciler carries the event's work out once it frees up).
 */
export class DeliveryOutcome extends Error {
  override name = "DeliveryOutcome";
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** How the delivery being handled is answered at once (see answerBeforeLongWork). */
const answerNow = new AsyncLocalStorage<() => void>();

/**
 * Answers the delivery being handled (202) before work that holds the process (reading and planning
 * a graph of megabytes takes seconds, during which no timer runs, so the 9 s answer came after
 * GitHub's 10 s): the work goes on after the answer. Outside a delivery, it does nothing.
 */
export async function answerBeforeLongWork(): Promise<void> {
  const answer = answerNow.getStore();
  if (!answer) return;
  answer();
  // The answer leaves before the work starts.
  await new Promise((resolve) => setImmediate(resolve));
}

class Refused extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** The raw body, refused past `max` bytes (by its declared length, or as it streams). */
async function readBody(req: IncomingMessage, max: number): Promise<Buffer> {
  const declared = Number(req.headers["content-length"] ?? 0);
  if (declared > max) throw new Refused(413, `the body is over the ${max}-byte limit`);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > max) throw new Refused(413, `the body is over the ${max}-byte limit`);
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

const header = (req: IncomingMessage, name: string): string => {
  const value = req.headers[name];
  if (typeof value !== "string" || value === "") throw new Refused(400, `the ${name} header is missing`);
  return value;
};

export function webhookIngress(probot: Probot, options: IngressOptions) {
  const max = options.maxBytes ?? MAX_WEBHOOK_BYTES;
  return async (req: IncomingMessage, res: ServerResponse): Promise<boolean> => {
    if ((req.url ?? "").split("?")[0] !== options.path) return false;
    const answer = (status: number, text: string) => {
      if (!res.headersSent) res.writeHead(status, { "content-type": "text/plain" }).end(`${text}\n`);
    };
    if (req.method !== "POST") {
      answer(405, "POST only");
      return true;
    }
    const delivery = String(req.headers["x-github-delivery"] ?? "-").slice(0, 80);
    const event = String(req.headers["x-github-event"] ?? "-").slice(0, 40);
    const logLine = (outcome: string) => options.log(`webhook ${delivery} (${event}): ${outcome}`);
    let payload: unknown;
    try {
      const name = header(req, "x-github-event");
      const signature = header(req, "x-hub-signature-256");
      header(req, "x-github-delivery");
      const body = await readBody(req, max);
      const verified = await verifyWithFallback(
        options.secret,
        body.toString("utf8"),
        signature,
        options.previousSecrets ?? [],
      ).catch(() => false);
      if (!verified)
        throw new Refused(400, "the signature does not match the body (check the app's webhook secret)");
      try {
        payload = JSON.parse(body.toString("utf8"));
      } catch {
        throw new Refused(400, "the body is not JSON");
      }
      const problem = payloadProblem(name, payload);
      if (problem) throw new Refused(400, problem);
    } catch (error) {
      if (!(error instanceof Refused)) throw error;
      logLine(`refused ${error.status}: ${error.message}`);
      answer(error.status, error.message);
      if (error.status === 413) req.destroy();
      return true;
    }
    let early = false;
    const answerEarly = () => {
      early = true;
      answer(202, "accepted: worked after this answer");
    };
    const handled = answerNow
      .run(answerEarly, () =>
        probot.receive({ id: delivery, name: event as never, payload: payload as never }),
      )
      .then(
        () => {
          logLine(early ? "handled after its answer" : "handled");
          answer(200, "ok");
        },
        (error: unknown) => {
          const errors = error instanceof AggregateError ? error.errors : [error];
          const lines = errors.map((e) => (e as Error).message).join("; ");
          const outcomes = errors.filter((e) => e instanceof DeliveryOutcome);
          if (outcomes.length === errors.length) {
            const status = Math.max(...outcomes.map((o) => o.status));
            logLine(`${status < 300 ? "handled" : `answered ${status}`}: ${lines}`);
            answer(status, lines);
            return;
          }
          logLine(`failed: ${lines}`);
          answer(500, "the app failed to handle the event; its log says why");
        },
      );
    const late = new Promise<void>((resolve) =>
      setTimeout(() => {
        answer(202, "still processing");
        resolve();
      }, options.answerWithinMs ?? ANSWER_WITHIN_MS).unref(),
    );
    await Promise.race([handled, late]);
    return true;
  };
}
