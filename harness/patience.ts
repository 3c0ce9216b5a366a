/**
 * How long the tests wait before they call something hung: the one measure every time limit of
 * test/ and harness/ derives from. A limit is there to catch a hang, never to measure speed (that is
 * the benches'), so it is far beyond what the slowest test takes on a machine busy with other work;
 * `AGENTRELAY_PATIENCE=N` multiplies it on a machine slower still.
 */
const factor = Number(process.env.AGENTRELAY_PATIENCE) > 0 ? Number(process.env.AGENTRELAY_PATIENCE) : 1;

/** A test or hook that runs longer than this is hung (vitest's testTimeout and hookTimeout). */
export const HUNG_MS = 10 * 60_000 * factor;

/**
 * How long a test waits for something to happen (a server to answer, a process to go, a run to
 * reach a state) before it says what did not: within HUNG_MS, so that its message is what is read.
 */
export const WAIT_MS = HUNG_MS / 2;

/** Waits until `condition` holds, polling every `everyMs`; after WAIT_MS, throws that `what` did not happen. */
export async function until(
  condition: () => boolean | Promise<boolean>,
  what: string,
  everyMs = 100,
): Promise<void> {
  const deadline = Date.now() + WAIT_MS;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`${what}: still not so after ${WAIT_MS / 1000} s`);
    await new Promise((done) => setTimeout(done, everyMs));
  }
}
