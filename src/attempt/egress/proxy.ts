/**
 * The egress proxy: the one door out of an attempt's namespace. The agent's tools reach it through
 * HTTP_PROXY and HTTPS_PROXY (curl, git, npm, pip and Claude Code itself honour them); it forwards
 * plain HTTP and tunnels CONNECT to the hosts on the attempt's allowlist, and answers 403 to every
 * other host, which it reports. It is proxy-chain (Apify's maintained Node proxy server, used in
 * production crawling): it runs inside the runner (no binary to install, nothing to configure in a
 * file), takes the decision per request from a function, and connects where that function says, so
 * the agent's namespace needs no DNS at all.
 *
 * The host it decides on is the one it connects to: proxy-chain parses the request's target once
 * (WHATWG URL for a forwarded request, `host:port` for CONNECT), hands that hostname here, and
 * connects to the address resolved here (resolver.ts), never the system resolver's answer.
 */
import type { lookup } from "node:dns";
import { isIP } from "node:net";
import { RequestError, Server } from "proxy-chain";
import { allowsHost } from "../../graph/network.ts";
import { internalAddress, pinnedLookup, resolveName, type ResolverSnapshot } from "./resolver.ts";

export interface EgressProxy {
  port: number;
  /** The proxy's HTTP server: connections accepted elsewhere (another namespace) are handed to it. */
  accept(socket: import("node:net").Socket): void;
  close(): Promise<void>;
}

/**
 * Starts the proxy on 127.0.0.1; `onRefused` hears each host it refused (with why, when the host is
 * on the list but its address may not be reached). Names resolve by `resolver`, the snapshot the
 * runner took before any agent process existed.
 */
export async function startEgressProxy(
  allow: readonly string[],
  onRefused: (host: string, port: number, why?: string) => void,
  resolver: ResolverSnapshot,
): Promise<EgressProxy> {
  const server = new Server({
    port: 0,
    host: "127.0.0.1",
    prepareRequestFunction: async ({ hostname, port }) => {
      if (!allowsHost(allow, hostname, port)) {
        onRefused(hostname, port);
        throw new RequestError(
          `agentrelay: ${hostname} is not on this attempt's network allowlist (the graph's network.allow)`,
          403,
        );
      }
      // An address the list names is reached as named (Node looks no address up).
      if (isIP(hostname.replace(/^\[(.*)\]$/, "$1")) !== 0) return {};
      let found;
      try {
        found = await resolveName(resolver, hostname);
      } catch (error) {
        throw new RequestError(`agentrelay: ${(error as Error).message}`, 502);
      }
      const inside = found.find((a) => internalAddress(a.address));
      if (inside) {
        const why = `it resolves to ${inside.address}, ${internalAddress(inside.address)}`;
        onRefused(hostname, port, why);
        throw new RequestError(
          `agentrelay: ${hostname} is on the allowlist, but ${why}, which no allowed name may lead to (network.allow may name the address itself)`,
          403,
        );
      }
      return { dnsLookup: pinnedLookup(found[0]!) as unknown as typeof lookup };
    },
  });
  // A client that drops its connection is no failure of the proxy's.
  server.on("requestFailed", () => {});
  await server.listen();
  return {
    port: server.port,
    accept: (socket) => server.server.emit("connection", socket),
    close: () => server.close(true),
  };
}
