/**
 * The egress allowlist of one attempt: its processes (Claude Code, its tools, gates, criteria) reach
 * the network only through the egress proxy, which lets through the model API and the hosts the graph
 * names (`network.allow`); everything else is refused, and each refusal is logged with its host and
 * counted. Where the rules live:
 * - `namespace` (local mode, Linux): a network namespace of the attempt's own (namespace.ts);
 * - `container` (the Action): the job container's namespace, the rules limited to the agents' group
 *   (AGENT_GID), in which the agent's own user runs its commands with no capability (agent-user.ts;
 *   the runner keeps CAP_NET_ADMIN).
 * Either way the rules are the same text (rules.ts), applied by `nft` before the agent starts. When a
 * machine cannot enforce them, or the graph opts out (`allow: ["*"]`), the attempt says so and runs
 * unfiltered.
 */
import { allowsEverything, allowsHost } from "../../graph/network.ts";
import { AGENT_GID } from "../agent-user.ts";
import { openNamespace } from "./namespace.ts";
import { startEgressProxy } from "./proxy.ts";
import { type ResolverSnapshot, snapshotResolver } from "./resolver.ts";
import { EGRESS_TABLE, egressRules, nft, refusedConnections } from "./rules.ts";

export type EgressMode = "namespace" | "container";

export interface EgressOptions {
  mode: EgressMode;
  /** The graph's `network.allow` for the task. */
  allow: readonly string[];
  /** The model API as the agent is given it (ANTHROPIC_BASE_URL): always reachable. */
  modelUrl: string;
  /** The entry that runs `egress-namespace` (the CLI's): a namespace's holder. */
  entry: string;
  /**
   * How the egress proxy resolves names: the resolver's configuration as it was before any agent
   * process existed (the local runner takes it when it starts); absent, it is read now.
   */
  resolver?: ResolverSnapshot;
  /** `container`: the group the agent's own user runs in (agent-user.ts), whose sockets are filtered. */
  agentGroup?: number | null;
  log: (line: string) => void;
}

export interface Refusal {
  /** request: through the proxy; lookup: a DNS query; connection: any other socket. */
  kind: "request" | "lookup" | "connection";
  host: string;
  count: number;
}

export interface Egress {
  enforced: boolean;
  /** What the attempt tells about its network when it is not filtered as usual, or null. */
  note: string | null;
  /**
   * Put before every agent command: the namespace's entry (namespace.ts); nothing in a job container,
   * where the agent's own user (agent-user.ts) runs in the group the rules filter.
   */
  prefix: string[];
  /** The proxy variables the agent's tools read. */
  env: Record<string, string>;
  /** Every refusal so far, by host. */
  refusals(): Promise<Refusal[]>;
  close(): Promise<void>;
}

/** An attempt whose network is not filtered, and why. */
function unfiltered(note: string): Egress {
  return { enforced: false, note, prefix: [], env: {}, refusals: async () => [], close: async () => {} };
}

/** The model API's host and port, as the proxy sees a request for it. */
function modelHost(url: string): string {
  const parsed = new URL(url);
  const port = parsed.port || (parsed.protocol === "https:" ? "443" : "80");
  return `${parsed.hostname}:${port}`;
}

export async function startEgress(options: EgressOptions): Promise<Egress> {
  if (allowsEverything(options.allow))
    return unfiltered('network: not filtered, as the graph allows every host (network.allow: ["*"])');
  if (process.platform !== "linux")
    return unfiltered(
      `network: not filtered: the allowlist needs Linux network namespaces (this is ${process.platform})`,
    );
  const counts = new Map<string, Refusal>();
  const count = (kind: Refusal["kind"], host: string, why?: string) => {
    const key = `${kind} ${host}`;
    const known = counts.get(key);
    if (known) known.count++;
    else {
      counts.set(key, { kind, host, count: 1 });
      options.log(
        `network: refused ${kind === "lookup" ? "a DNS lookup of" : `a ${kind} to`} ${host}${why ? ` (${why})` : ""}`,
      );
    }
  };
  const allow = [...options.allow, modelHost(options.modelUrl)];
  const proxy = await startEgressProxy(
    allow,
    (host, port, why) => count("request", `${host}:${port}`, why),
    options.resolver ?? snapshotResolver(),
  );
  const onLookup = (name: string) => {
    if (!allowsHost(allow, name, null)) count("lookup", name.replace(/\.$/, ""));
  };
  const env = (port: number): Record<string, string> => {
    const url = `http://127.0.0.1:${port}`;
    return {
      HTTP_PROXY: url,
      HTTPS_PROXY: url,
      http_proxy: url,
      https_proxy: url,
      // Nothing bypasses the proxy (a direct connection is refused anyway, only less clearly).
      NO_PROXY: "",
      no_proxy: "",
      NODE_USE_ENV_PROXY: "1",
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
    };
  };
  // The filter records refused connections in the kernel; they are read (and logged) when asked for.
  const logged = new Set<string>();
  const refusals = (listing: string | null): Refusal[] => {
    const connections = (listing ? refusedConnections(listing) : []).map((c) => {
      const host = `${c.host}:${c.port}`;
      if (!logged.has(host)) options.log(`network: refused a connection to ${host}`);
      logged.add(host);
      return { kind: "connection" as const, host, count: c.count };
    });
    return [...counts.values(), ...connections];
  };

  if (options.mode === "namespace") {
    let namespace;
    try {
      namespace = await openNamespace(options.entry, onLookup);
    } catch (error) {
      await proxy.close();
      return unfiltered(
        `network: not filtered: this machine gives the attempt no network namespace (${(error as Error).message})`,
      );
    }
    namespace.door.on("connection", (socket) => proxy.accept(socket));
    if (namespace.note) options.log(`network: ${namespace.note}`);
    return {
      enforced: true,
      note: namespace.note ? `network: ${namespace.note}` : null,
      prefix: namespace.prefix,
      env: env(namespace.doorPort),
      refusals: async () => refusals(await namespace.listing()),
      close: async () => {
        namespace.close();
        await proxy.close();
      },
    };
  }

  // The rules tell the agent's sockets from the runner's by their group: without a user of its own,
  // the agent has no group of its own.
  if (options.agentGroup !== AGENT_GID) {
    await proxy.close();
    return unfiltered(
      "network: not filtered: the agent has no user of its own here (the runner is not root)",
    );
  }
  // A job container holds one attempt: rules already there are another attempt's, not to be replaced.
  if ((await nft(["list", "table", "inet", EGRESS_TABLE])).ok) {
    await proxy.close();
    return unfiltered("network: not filtered: another attempt's rules already filter this namespace");
  }
  // Only here does the runner answer DNS itself (a namespace's holder does it there): dns-packet is
  // loaded when needed, not by every attempt.
  const { startDnsStub } = await import("./dns-stub.ts");
  const dns = await startDnsStub(onLookup);
  const rules = await nft(
    ["-f", "-"],
    egressRules({ agentGid: AGENT_GID, openPorts: [proxy.port], dnsPort: dns.port }),
  );
  if (!rules.ok) {
    await Promise.all([proxy.close(), dns.close()]);
    return unfiltered(
      `network: not filtered: the job container cannot set its network rules (give it CAP_NET_ADMIN: the task workflow's container options --cap-add=NET_ADMIN): ${rules.output.split("\n")[0]}`,
    );
  }
  const list = async () => {
    const listing = await nft(["-j", "list", "table", "inet", EGRESS_TABLE]);
    return listing.ok ? listing.output : null;
  };
  return {
    enforced: true,
    note: null,
    prefix: [],
    env: env(proxy.port),
    refusals: async () => refusals(await list()),
    close: async () => {
      await nft(["delete", "table", "inet", EGRESS_TABLE]);
      await Promise.all([proxy.close(), dns.close()]);
    },
  };
}

/** The lines an attempt's report carries about its network: the note, then one per refused host. */
export function egressLines(egress: Pick<Egress, "note">, refusals: Refusal[]): string[] {
  const how = { request: "request", lookup: "DNS lookup", connection: "connection" };
  const total = refusals.reduce((sum, r) => sum + r.count, 0);
  const shown = refusals
    .slice(0, 20)
    .map((r) => `${r.host} (${r.count} ${how[r.kind]}${r.count === 1 ? "" : "s"})`);
  const more = refusals.length > shown.length ? `, and ${refusals.length - shown.length} more hosts` : "";
  return [
    ...(egress.note ? [egress.note] : []),
    ...(total > 0
      ? [`network: refused ${total} time(s), off the allowlist: ${shown.join(", ")}${more}`]
      : []),
  ];
}
