/**
 * The egress proxy: the one door out of an attempt's namespace. The agent's tools reach it through
 * HTTP_PROXY and HTTPS_PROXY (curl, git, npm, pip and Claude Code itself honour them); it forwards
 * plain HTTP and tunnels CONNECT to the hosts on the attempt's allowlist, and answers 403 to every
 * other host, which it reports. It is proxy-chain (Apify's maintained Node proxy server, used in
 * production crawling): it runs inside the runner (no binary to install, nothing to configure in a
 * file), takes the decision per request from a function, and resolves names itself, so the agent's
 * namespace needs no DNS at all.
 */
import { RequestError, Server } from "proxy-chain";
import { allowsHost } from "../../graph/network.ts";

export interface EgressProxy {
  port: number;
  /** The proxy's HTTP server: connections accepted elsewhere (another namespace) are handed to it. */
  accept(socket: import("node:net").Socket): void;
  close(): Promise<void>;
}

/** Starts the proxy on 127.0.0.1; `onRefused` hears each host it refused. */
export async function startEgressProxy(
  allow: readonly string[],
  onRefused: (host: string, port: number) => void,
): Promise<EgressProxy> {
  const server = new Server({
    port: 0,
    host: "127.0.0.1",
    prepareRequestFunction: ({ hostname, port }) => {
      if (allowsHost(allow, hostname, port)) return {};
      onRefused(hostname, port);
      throw new RequestError(
        `agentrelay: ${hostname} is not on this attempt's network allowlist (the graph's network.allow)`,
        403,
      );
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
