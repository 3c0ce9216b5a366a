/**
 * An attempt's own network namespace (Linux): the agent's processes run in it, and the only way out
 * is the egress proxy's door. A holder process (`agentrelay egress-namespace`, started through
 * `unshare`) sets the namespace up and keeps it: loopback, a route that sends every other address to
 * the filter (a veth pair whose far end is in the namespace too, so nothing ever leaves it), the
 * nftables rules, the DNS stub, and a listening socket on 127.0.0.1 that it hands to the runner over
 * Node's IPC channel. The runner accepts the agent's connections on that socket from outside the
 * namespace and gives them to the proxy, which reaches the allowed hosts from the runner's network.
 *
 * Root gets a namespace with `unshare --net`; any other user one inside a user namespace of its own
 * (`unshare --user --map-root-user --net`), where the kernel allows those.
 */
import { spawn } from "node:child_process";
import { accessSync, constants } from "node:fs";
import { join } from "node:path";
import { createServer, type Server } from "node:net";
import { dropPrivileges } from "../agent-user.ts";
import { runBounded } from "../bounded.ts";
import { programPath } from "../programs.ts";
import { startDnsStub } from "./dns-stub.ts";
import { EGRESS_TABLE, egressRules, nft } from "./rules.ts";

/** The holder's messages to the runner. */
type HolderMessage =
  | { type: "ready"; dnsPort: number; doorPort: number; note: string | null }
  | { type: "failed"; reason: string }
  | { type: "dns"; name: string }
  | { type: "listing"; id: number; listing: string | null };

/** The runner's requests to the holder. */
type RunnerMessage = { type: "list"; id: number };

/** Whether an executable of this name is on PATH. */
function onPath(name: string): boolean {
  return (process.env.PATH ?? "").split(":").some((dir) => {
    try {
      accessSync(join(dir || ".", name), constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

/**
 * The line of a program's error output that says what went wrong: for a Node process that crashed,
 * its error (not the code frame before it, the stack after it, or the version line that ends it);
 * otherwise the last line.
 */
export function errorLine(stderr: string): string {
  const lines = stderr
    .split("\n")
    .map((line) => line.trim())
    .filter(Boolean);
  return (
    lines.find((line) => /^[A-Za-z]*Error\b/.test(line)) ??
    lines.filter((line) => !/^at\s/.test(line) && !/^Node\.js v\d/.test(line)).at(-1) ??
    ""
  );
}

/**
 * Runs `ip` commands in the holder's namespace, in order, in one process (`ip -batch -`, which stops
 * at the first that fails): the index of the one that failed and why, or null when all succeeded.
 */
async function ip(commands: string[][]): Promise<{ index: number; reason: string } | null> {
  const run = await runBounded(programPath("ip"), ["-batch", "-"], {
    cwd: "/",
    env: process.env,
    timeoutMs: 10_000,
    input: commands.map((args) => `${args.join(" ")}\n`).join(""),
  });
  if (run.code === 0) return null;
  // `ip -batch` ends its error output with "Command failed -:LINE".
  const line = /Command failed -:(\d+)/.exec(run.output);
  const index = line ? Math.min(Math.max(Number(line[1]) - 1, 0), commands.length - 1) : 0;
  const error = run.output.replace(/Command failed -:\d+/, "").trim();
  return { index, reason: `ip ${commands[index]!.join(" ")}: ${error || `exit ${run.code}`}` };
}

/** The holder's work, in the new namespace (`agentrelay egress-namespace`): see the file's comment. */
export async function holdNamespace(): Promise<number> {
  const send = (message: HolderMessage, handle?: Server) =>
    new Promise<void>((resolve) => process.send!(message, handle, () => resolve()));
  if (!process.send) {
    process.stderr.write("egress-namespace is started by the attempt runner, with an IPC channel\n");
    return 2;
  }
  const fail = async (reason: string) => {
    await send({ type: "failed", reason });
    return 1;
  };
  for (const [tool, from] of [
    ["ip", "iproute2"],
    ["nft", "nftables"],
  ] as const)
    if (!onPath(tool)) return fail(`${tool} was not found on PATH: install ${from} (the Debian package)`);
  // Loopback first (without it, nothing works: the attempt fails). Then, without a route, a
  // connection to an outside address fails before the filter sees it, and so unrecorded; the veth
  // pair is that route (its far end is in this namespace too). One `ip` runs them all, in order.
  const failed = await ip([
    ["link", "set", "lo", "up"],
    ["link", "add", "agentrelay0", "type", "veth", "peer", "name", "agentrelay1"],
    ["addr", "add", "192.0.2.1/32", "dev", "agentrelay0"],
    ["link", "set", "agentrelay0", "up"],
    ["link", "set", "agentrelay1", "up"],
    ["route", "add", "default", "dev", "agentrelay0"],
    // IPv6's default route (`ip -6 route add default`: a batch line takes no options).
    ["route", "add", "::/0", "dev", "agentrelay0"],
  ]);
  if (failed?.index === 0) return fail(failed.reason);
  const route = failed?.reason ?? null;
  const dns = await startDnsStub((name) => void send({ type: "dns", name }));
  const door = createServer();
  await new Promise<void>((resolve) => door.listen(0, "127.0.0.1", resolve));
  const doorPort = (door.address() as { port: number }).port;
  const rules = await nft(
    ["-f", "-"],
    egressRules({ agentGid: null, openPorts: [doorPort], dnsPort: dns.port }),
  );
  if (!rules.ok) return fail(`nft: ${rules.output}`);
  const note = route ? `connections to addresses are refused unrecorded (${route})` : null;
  await send({ type: "ready", dnsPort: dns.port, doorPort, note }, door);
  // The runner holds the door now; this copy would only compete for its connections.
  door.close();
  process.on("message", (message: RunnerMessage) => {
    if (message.type !== "list") return;
    void nft(["-j", "list", "table", "inet", EGRESS_TABLE]).then((listing) =>
      send({ type: "listing", id: message.id, listing: listing.ok ? listing.output : null }),
    );
  });
  // The namespace lives while the runner does: when it goes, so does the channel, and the holder.
  await new Promise<void>((resolve) => process.on("disconnect", resolve));
  await dns.close();
  return 0;
}

export interface AttemptNamespace {
  /** Put before an agent command: it runs in the namespace, with no capability left to change it. */
  prefix: string[];
  /** The listening socket in the namespace that leads to the egress proxy, and its port there. */
  door: Server;
  doorPort: number;
  /** Something the agent should know about how the namespace was made, or null. */
  note: string | null;
  /** The filter's table as JSON (`nft -j list table`), read in the namespace; null if it cannot be. */
  listing(): Promise<string | null>;
  close(): void;
}

/**
 * Opens the attempt's namespace with a holder started as `node ENTRY egress-namespace`; throws with
 * the reason when this machine cannot give one.
 */
export async function openNamespace(
  entry: string,
  onDnsQuery: (name: string) => void,
): Promise<AttemptNamespace> {
  const root = process.geteuid?.() === 0;
  const user = root ? [] : ["--user", "--map-root-user"];
  const holder = spawn(
    programPath("unshare"),
    [...user, "--net", "--", process.execPath, entry, "egress-namespace"],
    {
      stdio: ["ignore", "ignore", "pipe", "ipc"],
    },
  );
  let stderr = "";
  // Its beginning: a crash says what went wrong before its stack.
  holder
    .stderr!.setEncoding("utf8")
    .on("data", (chunk: string) => (stderr = (stderr + chunk).slice(0, 8_000)));
  const ready = await new Promise<{ message: HolderMessage; door?: Server }>((resolve) => {
    holder.on("message", (message: HolderMessage, door?: Server) => {
      if (message.type === "ready" || message.type === "failed")
        resolve({ message, ...(door ? { door } : {}) });
      else if (message.type === "dns") onDnsQuery(message.name);
    });
    holder.on("error", (error) => resolve({ message: { type: "failed", reason: error.message } }));
    holder.on("exit", (code) =>
      resolve({
        message: {
          type: "failed",
          reason: errorLine(stderr) || `the holder exited (${code})`,
        },
      }),
    );
  });
  if (ready.message.type !== "ready" || !ready.door) {
    holder.kill("SIGKILL");
    throw new Error(ready.message.type === "failed" ? ready.message.reason : "the holder sent no socket");
  }
  const { doorPort, note } = ready.message;
  let next = 0;
  const waiting = new Map<number, (listing: string | null) => void>();
  holder.on("message", (message: HolderMessage) => {
    if (message.type === "listing") waiting.get(message.id)?.(message.listing);
  });
  holder.on("exit", () => waiting.forEach((answer) => answer(null)));
  // In a user namespace the agent keeps its own ids (the namespace maps them to root, without capabilities).
  const enterUser = root ? [] : ["--user", "--preserve-credentials"];
  const enter = [programPath("nsenter"), `--target=${holder.pid}`, ...enterUser, "--net", "--"];
  return {
    prefix: [...enter, ...dropPrivileges()],
    door: ready.door,
    doorPort,
    note,
    listing: () =>
      new Promise((resolve) => {
        if (!holder.connected) return resolve(null);
        const id = ++next;
        waiting.set(id, resolve);
        holder.send({ type: "list", id } satisfies RunnerMessage);
      }),
    close: () => {
      ready.door!.close();
      if (holder.connected) holder.disconnect();
      holder.kill("SIGTERM");
    },
  };
}
