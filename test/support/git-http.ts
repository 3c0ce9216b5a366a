/**
 * A git remote over HTTP on loopback, as GitHub serves one to a job: `git http-backend` (git's own
 * smart-HTTP server, run as CGI) behind a check of the token each request carries (basic auth as
 * `x-access-token:TOKEN`, as the Action sends it). Tests take tokens away to see which one a push uses.
 */
import { spawn } from "node:child_process";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

export interface GitHttpRemote {
  /** The server's address: repositories are `${url}/owner/name.git` under `root`. */
  url: string;
  /** The tokens the server accepts now. */
  accepted: Set<string>;
  /** Every token presented, in order. */
  presented: string[];
  close(): void;
}

export async function serveGit(root: string, tokens: string[]): Promise<GitHttpRemote> {
  const accepted = new Set(tokens);
  const presented: string[] = [];
  const server: Server = createServer((req, res) => {
    const basic = /^basic (.+)$/i.exec(req.headers.authorization ?? "")?.[1];
    const token = basic
      ? Buffer.from(basic, "base64")
          .toString()
          .replace(/^x-access-token:/, "")
      : "";
    presented.push(token);
    if (!accepted.has(token))
      return void res.writeHead(401, { "www-authenticate": 'Basic realm="git"' }).end();
    const url = new URL(req.url ?? "/", "http://git");
    const cgi = spawn("git", ["http-backend"], {
      env: {
        ...process.env,
        GIT_PROJECT_ROOT: root,
        GIT_HTTP_EXPORT_ALL: "1",
        REMOTE_USER: "x-access-token", // receive-pack (push) is served only to a user
        PATH_INFO: url.pathname,
        QUERY_STRING: url.search.slice(1),
        REQUEST_METHOD: req.method ?? "GET",
        CONTENT_TYPE: req.headers["content-type"] ?? "",
        HTTP_CONTENT_ENCODING: String(req.headers["content-encoding"] ?? ""),
      },
    });
    req.pipe(cgi.stdin);
    let head = Buffer.alloc(0);
    let body = false;
    cgi.stdout.on("data", (chunk: Buffer) => {
      if (body) return void res.write(chunk);
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf("\r\n\r\n");
      if (end < 0) return;
      const headers: Record<string, string> = {};
      let status = 200;
      for (const line of head.subarray(0, end).toString().split("\r\n")) {
        const [name, ...value] = line.split(":");
        if (name!.toLowerCase() === "status") status = Number(value.join(":").trim().split(" ")[0]);
        else headers[name!] = value.join(":").trim();
      }
      res.writeHead(status, headers);
      res.write(head.subarray(end + 4));
      body = true;
    });
    cgi.on("close", () => res.end());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    accepted,
    presented,
    close: () => server.close(),
  };
}
