/**
 * How the fake GitHub answers: a reply (status, body, headers), a route that gives one for a matched
 * path, a redirect, and a resource it does not hold, answered 404 as GitHub does.
 */

/** Status, body and headers of an answer. */
export type Reply = [number, unknown?, Record<string, string>?];

/** A redirect GitHub answers with (an artifact's download: 302 to its blob); servers send `Location`. */
export class Redirect {
  constructor(readonly location: string) {}
}

/** Answers one request: the path's match, the JSON body, the query, the Accept header. */
export type Route = (
  match: RegExpExecArray,
  body: Record<string, unknown>,
  query: URLSearchParams,
  accept: string,
) => Reply;

/** Adds a route: `method` on `path` (REPO stands for the repository's API path). */
export type AddRoute = (method: string, path: string, handler: Route) => void;

/** Thrown by a route for a resource the fake does not hold: answered 404, as GitHub does. */
export class Missing extends Error {}

export function answerMissing(route: () => Reply): Reply {
  try {
    return route();
  } catch (error) {
    if (error instanceof Missing) return [404, { message: "Not Found" }];
    throw error;
  }
}
