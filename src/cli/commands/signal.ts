import { runSignalCommand, SignalUsageError } from "../../attempt/signals.ts";
import type { Io } from "../io.ts";

/** `agentrelay signal COMMAND [ARGS...]`: the agent's in-job commands (agentrelay-concern, ...) call this. */
export function signalCommand(args: string[], io: Io): number {
  const [command = "", ...rest] = args;
  try {
    io.out(runSignalCommand(command, rest, process.env.AGENTRELAY_SIGNAL_DIR));
    return 0;
  } catch (error) {
    const parse = (error as { code?: string }).code?.startsWith("ERR_PARSE_ARGS");
    if (!(error instanceof SignalUsageError) && !parse) throw error;
    io.err(`${command}: ${(error as Error).message}`);
    return 1;
  }
}
