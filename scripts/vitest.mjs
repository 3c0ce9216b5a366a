// The test suite as `npm test` runs it, and as `npm run test:loaded` runs it beside busy work.
//   node scripts/vitest.mjs [--loaded] [VITEST ARGS...]
// Without a terminal, vitest is asked for no colour codes: it colours its output unless NO_COLOR is
// set, so a log written to a file carried escape codes. With --loaded, the suite runs beside busy
// loops on every core (AGENTRELAY_LOOPS_PER_CORE, 2 by default): it must pass, only slower, since a
// time limit in the tests catches a hang and measures nothing (harness/patience.ts).
import { spawn } from "node:child_process";
import { availableParallelism } from "node:os";
import { fileURLToPath, URL } from "node:url";

const args = process.argv.slice(2);
const loaded = args[0] === "--loaded";
if (loaded) args.shift();

const env = { ...process.env };
if (!process.stdout.isTTY && !("FORCE_COLOR" in env)) env.NO_COLOR = "1";

const loops = [];
if (loaded) {
  const perCore = Number(env.AGENTRELAY_LOOPS_PER_CORE ?? 2);
  if (!Number.isInteger(perCore) || perCore < 0) {
    console.error(`AGENTRELAY_LOOPS_PER_CORE must be a whole number, got '${env.AGENTRELAY_LOOPS_PER_CORE}'`);
    process.exit(2);
  }
  const cores = availableParallelism();
  for (let i = 0; i < perCore * cores; i++)
    loops.push(spawn(process.execPath, ["-e", "for (;;);"], { stdio: "ignore" }));
  console.log(`The suite runs beside ${loops.length} busy loops (${perCore} on each of ${cores} cores).`);
}
const stopLoops = () => loops.forEach((loop) => loop.kill("SIGKILL"));
process.on("exit", stopLoops);

const vitest = fileURLToPath(new URL("../node_modules/vitest/vitest.mjs", import.meta.url));
const child = spawn(process.execPath, [vitest, "run", ...args], { stdio: "inherit", env });
// Ctrl-C reaches vitest through the terminal's process group already; a SIGTERM is sent to this process alone.
process.on("SIGINT", () => {});
process.on("SIGTERM", () => child.kill("SIGTERM"));
child.on("exit", (code, signal) => {
  stopLoops();
  process.exitCode = code ?? (signal ? 1 : 0);
});
