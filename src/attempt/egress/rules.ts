/**
 * The packet filter of an attempt's network namespace, as nftables rules: what the agent's sockets
 * may reach (the egress proxy on loopback; DNS, any server, goes to the stub that logs and refuses
 * it), and a record of every other destination it tried (address and port, counted) before the
 * connection is refused. nftables is the kernel's own filter (Debian package `nftables`): the rules
 * live in the namespace, outside every process the agent runs, and only CAP_NET_ADMIN changes them,
 * which the agent's processes do not have. The same text is applied locally (a namespace of the
 * attempt's own) and in the Action (the job container's namespace, limited to the agent's group).
 */
import { runBounded } from "../bounded.ts";
import { programPath } from "../programs.ts";

export const EGRESS_TABLE = "agentrelay_egress";

export interface EgressRuleSpec {
  /** Only sockets of this group (the agent's, in a job container) are filtered; null: every socket. */
  agentGid: number | null;
  /** Loopback ports the agent may connect to: the egress proxy. */
  openPorts: number[];
  /** The DNS stub's port (UDP and TCP on loopback): queries to port 53 of any server go there. */
  dnsPort: number;
}

/** The ruleset, as `nft -f` reads it: the table is replaced whole, so applying it twice changes nothing. */
export function egressRules(spec: EgressRuleSpec): string {
  const ports = [...new Set(spec.openPorts)].sort((a, b) => a - b).join(", ");
  const agent = spec.agentGid === null ? "" : `meta skgid ${spec.agentGid} `;
  // In a job container the runner shares the namespace: its sockets pass, the agent's are filtered.
  const others = spec.agentGid === null ? [] : [`    meta skgid != ${spec.agentGid} accept`];
  return [
    `table inet ${EGRESS_TABLE}`,
    `delete table inet ${EGRESS_TABLE}`,
    `table inet ${EGRESS_TABLE} {`,
    "  set refused_v4 { type ipv4_addr . inet_service; flags dynamic; size 65535; counter; }",
    "  set refused_v6 { type ipv6_addr . inet_service; flags dynamic; size 65535; counter; }",
    "  chain dns {",
    "    type nat hook output priority -100; policy accept;",
    `    ${agent}udp dport 53 redirect to :${spec.dnsPort}`,
    `    ${agent}tcp dport 53 redirect to :${spec.dnsPort}`,
    "  }",
    "  chain egress {",
    "    type filter hook output priority 0; policy accept;",
    ...others,
    "    ct state established,related accept",
    `    ip daddr 127.0.0.1 tcp dport { ${ports}, ${spec.dnsPort} } accept`,
    `    ip daddr 127.0.0.1 udp dport ${spec.dnsPort} accept`,
    "    meta nfproto ipv4 meta l4proto { tcp, udp } update @refused_v4 { ip daddr . th dport }",
    "    meta nfproto ipv6 meta l4proto { tcp, udp } update @refused_v6 { ip6 daddr . th dport }",
    "    meta l4proto tcp reject with tcp reset",
    "    reject with icmpx admin-prohibited",
    "  }",
    "}",
    "",
  ].join("\n");
}

/** Runs `nft` with `input` on stdin (a ruleset), in the caller's namespace; its output, or why it failed. */
export async function nft(args: string[], input?: string): Promise<{ ok: boolean; output: string }> {
  const run = await runBounded(programPath("nft"), args, {
    cwd: "/",
    env: process.env,
    timeoutMs: 10_000,
    ...(input === undefined ? {} : { input }),
  });
  return {
    ok: run.code === 0,
    output: run.code === 0 ? run.stdout : run.output.trim() || `exit ${run.code}`,
  };
}

export interface RefusedConnection {
  /** The address (v4, or v6 in brackets) and port the agent tried. */
  host: string;
  port: number;
  /** Packets refused (a TCP connection is one; UDP, one per datagram). */
  count: number;
}

interface NftSetElement {
  elem?: { val?: { concat?: [string, number] }; counter?: { packets?: number } };
}

/** The destinations the filter refused, from `nft -j list table inet agentrelay_egress`. */
export function refusedConnections(listing: string): RefusedConnection[] {
  const parsed = JSON.parse(listing) as { nftables?: { set?: { name: string; elem?: NftSetElement[] } }[] };
  const out: RefusedConnection[] = [];
  for (const item of parsed.nftables ?? []) {
    if (!item.set?.name.startsWith("refused_")) continue;
    const v6 = item.set.name === "refused_v6";
    for (const element of item.set.elem ?? []) {
      const [address, port] = element.elem?.val?.concat ?? [];
      if (address === undefined || port === undefined) continue;
      out.push({ host: v6 ? `[${address}]` : address, port, count: element.elem?.counter?.packets ?? 1 });
    }
  }
  return out;
}
