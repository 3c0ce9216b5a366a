/**
 * Serves a fake's answers at an origin through nock (until `nock.cleanAll()`): one GitHub repository's
 * (fake-github.ts) or several's (fake-repositories.ts), each request's JSON body, Accept and
 * Authorization headers handed to `serve`.
 */
import nock from "nock";
import type { Reply } from "./fake-reply.ts";

export type Serve = (
  method: string,
  url: string,
  body: unknown,
  accept: string,
  authorization: string,
) => Promise<Reply>;

export function mountWithNock(origin: string, serve: Serve): void {
  const scope = nock(origin).persist();
  for (const method of ["GET", "POST", "PATCH", "PUT", "DELETE"]) {
    scope
      .intercept(() => true, method)
      .reply(async function (this: { req: { headers: Record<string, unknown> } }, uri, body) {
        const parsed = typeof body === "string" ? (body ? JSON.parse(body) : undefined) : body;
        const accept = String(this.req.headers.accept ?? "");
        const authorization = String(this.req.headers.authorization ?? "");
        const [status, data, headers] = await serve(method, uri, parsed, accept, authorization);
        return [
          status,
          data === undefined ? "" : typeof data === "string" ? data : JSON.stringify(data),
          { ...headers, "content-type": typeof data === "string" ? "text/plain" : "application/json" },
        ];
      });
  }
}
