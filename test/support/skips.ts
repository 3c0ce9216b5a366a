/**
 * Tests that need what a machine may not have (the shared fixtures, a browser) skip with a note that
 * names it; skip-reporter.ts prints the notes at the end of the run.
 */
import { beforeEach, describe } from "vitest";
import { FIXTURES, hasFixtures } from "./fixtures.ts";

/** Why tests that read the shared fixtures cannot run here, or null when they can. */
export const NO_FIXTURES = hasFixtures
  ? null
  : `the shared fixtures are missing: no ${FIXTURES} (set AGENTRELAY_FIXTURES to their folder)`;

/** A suite whose tests are skipped, with `missing` as their note, when `missing` is not null. */
export function describeNeeding(missing: string | null, name: string, body: () => void): void {
  describe(name, () => {
    if (missing !== null) beforeEach((context) => context.skip(missing));
    body();
  });
}
