/**
 * How the egress proxy finds the address of an allowed name, out of the agent's reach. The system
 * resolver reads /etc/hosts and /etc/resolv.conf on every lookup, and an agent that can write them
 * (root in a job container owns them) could point an allowed name anywhere. So the runner reads both
 * once, when it starts and before any agent process exists (`snapshotResolver`), and the proxy
 * resolves with that copy: the hosts entries first, as the system does, then Node's `dns.Resolver`
 * (c-ares, which reads no hosts file) asking the name servers the copy lists. The proxy then connects
 * to the address found here (`pinnedLookup`): neither proxy-chain nor the system resolves again.
 *
 * An allowed name never leads to this machine or its link: loopback (the runner's own services, the
 * credential proxy), link-local (cloud metadata at 169.254.169.254) and unspecified addresses are
 * refused for a name; the graph reaches such an address only by naming the address itself.
 */
import { readFileSync } from "node:fs";
import { Resolver } from "node:dns/promises";
import { BlockList, isIP, type LookupFunction } from "node:net";

/** /etc/hosts and the name servers of /etc/resolv.conf as they were when the runner started. */
export interface ResolverSnapshot {
  servers: string[];
  /** Each name (lower case, no trailing dot) and its addresses, in the file's order. */
  hosts: [string, string[]][];
}

/** Where the system resolver reads its configuration (tests point elsewhere). */
export const RESOLVER_FILES = { hosts: "/etc/hosts", resolvConf: "/etc/resolv.conf" };

const readOrEmpty = (file: string) => {
  try {
    return readFileSync(file, "utf8");
  } catch {
    return "";
  }
};
const lines = (text: string) =>
  text
    .split("\n")
    .map((line) => line.replace(/[#;].*$/, "").trim())
    .filter(Boolean);

/** Reads the resolver's configuration now (see the file's comment for when). */
export function snapshotResolver(files = RESOLVER_FILES): ResolverSnapshot {
  const servers = lines(readOrEmpty(files.resolvConf))
    .map((line) => line.split(/\s+/))
    .filter(([keyword, address]) => keyword === "nameserver" && address && isIP(address) !== 0)
    .map(([, address]) => address!);
  const hosts = new Map<string, string[]>();
  for (const line of lines(readOrEmpty(files.hosts))) {
    const [address, ...names] = line.split(/\s+/);
    if (!address || isIP(address) === 0) continue;
    for (const name of names) {
      const key = name.toLowerCase().replace(/\.$/, "");
      hosts.set(key, [...(hosts.get(key) ?? []), address]);
    }
  }
  // Without a name server, the system resolver asks this machine (glibc and c-ares both do).
  return { servers: servers.length > 0 ? servers : ["127.0.0.1"], hosts: [...hosts] };
}

export interface Address {
  address: string;
  family: 4 | 6;
}

const familyOf = (address: string): 4 | 6 => (isIP(address) === 6 ? 6 : 4);

/** The addresses of `name` by the snapshot (IPv4 first), or throws with a code as dns does. */
export async function resolveName(snapshot: ResolverSnapshot, name: string): Promise<Address[]> {
  const bare = name.replace(/^\[(.*)\]$/, "$1");
  if (isIP(bare) !== 0) return [{ address: bare, family: familyOf(bare) }];
  const key = bare.toLowerCase().replace(/\.$/, "");
  const listed = snapshot.hosts.find(([host]) => host === key)?.[1];
  if (listed) return listed.map((address) => ({ address, family: familyOf(address) }));
  const resolver = new Resolver({ timeout: 5_000, tries: 2 });
  resolver.setServers(snapshot.servers);
  const [v4, v6] = await Promise.allSettled([resolver.resolve4(key), resolver.resolve6(key)]);
  const found = [
    ...(v4.status === "fulfilled" ? v4.value.map((address) => ({ address, family: 4 as const })) : []),
    ...(v6.status === "fulfilled" ? v6.value.map((address) => ({ address, family: 6 as const })) : []),
  ];
  if (found.length > 0) return found;
  const reason = v4.status === "rejected" ? (v4.reason as NodeJS.ErrnoException) : null;
  throw Object.assign(new Error(`${key} does not resolve (${reason?.code ?? "no address"})`), {
    code: reason?.code ?? "ENOTFOUND",
  });
}

const INTERNAL: [string, number, "ipv4" | "ipv6", string][] = [
  ["127.0.0.0", 8, "ipv4", "loopback: this machine"],
  ["0.0.0.0", 8, "ipv4", "unspecified: this machine"],
  ["169.254.0.0", 16, "ipv4", "link-local, where cloud metadata answers"],
  ["::1", 128, "ipv6", "loopback: this machine"],
  ["::", 128, "ipv6", "unspecified: this machine"],
  ["fe80::", 10, "ipv6", "link-local"],
  // AWS's instance metadata over IPv6 (its IPv4 one is 169.254.169.254, above).
  ["fd00:ec2::254", 128, "ipv6", "cloud metadata"],
];

/** What an address is when no name may lead to it ("loopback: this machine"), or null. */
export function internalAddress(address: string): string | null {
  // An IPv4 address in IPv6 clothes (::ffff:127.0.0.1) is that IPv4 address.
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1];
  const plain = mapped ?? address;
  const type = isIP(plain) === 6 ? "ipv6" : "ipv4";
  for (const [network, prefix, family, what] of INTERNAL) {
    if (family !== type) continue;
    const list = new BlockList();
    list.addSubnet(network, prefix, family);
    if (list.check(plain, family)) return what;
  }
  return null;
}

/** A lookup (for `net.connect`) that answers `address` whatever it is asked: the one already resolved. */
export function pinnedLookup({ address, family }: Address): LookupFunction {
  return (_hostname, options, callback) => {
    if (options.all) (callback as (e: null, a: Address[]) => void)(null, [{ address, family }]);
    else callback(null, address, family);
  };
}
