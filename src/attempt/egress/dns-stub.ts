/**
 * The DNS server the agent's queries are redirected to (port 53 of any server, UDP and TCP): it
 * answers every query REFUSED and tells who listens which name was asked. The agent resolves nothing
 * itself: it reaches the hosts it may through the egress proxy, which resolves them. A lookup is also
 * a channel out (a name can carry data to whoever serves its domain), so none leaves the namespace.
 * Packets are read and written with dns-packet, the encoder most Node DNS tools build on.
 */
import { createSocket } from "node:dgram";
import { createServer, type Server, type Socket } from "node:net";
import * as dnsPacket from "dns-packet";

export interface DnsStub {
  port: number;
  close(): Promise<void>;
}

/** The REFUSED answer to a query, or null when the bytes are not a DNS query. */
function refusal(query: Buffer, onQuery: (name: string) => void): Buffer | null {
  let packet: dnsPacket.DecodedPacket;
  try {
    packet = dnsPacket.decode(query);
  } catch {
    return null;
  }
  for (const question of packet.questions ?? []) onQuery(question.name);
  return dnsPacket.encode({
    type: "response",
    id: packet.id ?? 0,
    // RCODE 5 (REFUSED) in the low bits, with the question echoed as resolvers expect.
    flags: dnsPacket.RECURSION_DESIRED | dnsPacket.RECURSION_AVAILABLE | 5,
    questions: packet.questions ?? [],
  });
}

/** Answers DNS over TCP: each message behind a two-byte length. */
function serveTcp(socket: Socket, onQuery: (name: string) => void): void {
  let pending = Buffer.alloc(0);
  socket.on("error", () => socket.destroy());
  socket.on("data", (chunk: Buffer) => {
    pending = Buffer.concat([pending, chunk]);
    while (pending.length >= 2 && pending.length >= 2 + pending.readUInt16BE(0)) {
      const length = pending.readUInt16BE(0);
      const answer = refusal(pending.subarray(2, 2 + length), onQuery);
      pending = pending.subarray(2 + length);
      if (!answer) return void socket.destroy();
      const framed = Buffer.alloc(2 + answer.length);
      framed.writeUInt16BE(answer.length, 0);
      answer.copy(framed, 2);
      socket.write(framed);
    }
  });
}

/** Starts the stub on 127.0.0.1, UDP and TCP on one port; `onQuery` hears each name asked. */
export async function startDnsStub(onQuery: (name: string) => void): Promise<DnsStub> {
  for (let attempt = 0; ; attempt++) {
    const udp = createSocket("udp4");
    udp.on("message", (message, peer) => {
      const answer = refusal(message, onQuery);
      if (answer) udp.send(answer, peer.port, peer.address);
    });
    await new Promise<void>((resolve) => udp.bind(0, "127.0.0.1", resolve));
    const port = udp.address().port;
    const tcp: Server = createServer((socket) => serveTcp(socket, onQuery));
    const listening = await new Promise<boolean>((resolve) => {
      tcp.once("error", () => resolve(false));
      tcp.listen(port, "127.0.0.1", () => resolve(true));
    });
    if (listening)
      return {
        port,
        close: async () => {
          udp.close();
          await new Promise<void>((resolve) => tcp.close(() => resolve()));
        },
      };
    // The TCP port was taken: another pair.
    udp.close();
    if (attempt === 10) throw new Error("no port free for the DNS stub on 127.0.0.1");
  }
}
