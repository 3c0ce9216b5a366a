/**
 * Runs before each test file in the worker it shares with other files (vitest.config.ts: `isolate:
 * false`, so that a worker loads the app, Octokit and zod once, not once a file), and puts back at
 * the file's end what a file may have changed for the next: the environment, the clock, nock's state.
 */
// nock patches Node's http when it loads, so it loads first: a module that keeps http's functions
// before (the Actions OIDC client does) would go around it in a later file of the same worker.
import nock from "nock";
import { afterAll, vi } from "vitest";

const environment = process.env;
const variables = { ...process.env };

afterAll(() => {
  // In place, and the same object: child processes and native code read the real environment.
  process.env = environment;
  for (const key of Object.keys(process.env)) if (!(key in variables)) delete process.env[key];
  Object.assign(process.env, variables);
  vi.useRealTimers();
  vi.restoreAllMocks();
  nock.cleanAll();
  nock.enableNetConnect();
});
