/**
 * bench/api-budget: runs graphs through the real app (Probot over HTTP on loopback) against a fake
 * GitHub that counts every REST and GraphQL call, with jobs simulated as the Action talks to the app
 * (token, push, report). Prints the calls per task attempt (target: at most 8, status updates
 * included) and the latency of each webhook or job request without network, that is less the time
 * GitHub takes to answer (target: p99 < 20 ms).
 */
import { DIAMOND } from "../harness/graphs.ts";
import { type Harness, runJob, startApp } from "../harness/app.ts";
import { generateGraph } from "./graph-scale.ts";
import { table } from "./table.ts";

const percentile = (samples: number[], p: number) =>
  [...samples].sort((a, b) => a - b)[Math.min(samples.length - 1, Math.floor(samples.length * p))]!;

async function scenario(
  name: string,
  path: string,
  text: string,
  statusIntervalMs: number,
): Promise<string[]> {
  const h: Harness = await startApp({ statusIntervalMs }, "fetch");
  // The fake GitHub answers in this process: the time it spends answering stands for GitHub's
  // servers and the network, so it is taken out of the handler's time (and shown separately).
  let inGitHub = 0;
  const answer = h.gh.handle.bind(h.gh);
  h.gh.handle = (...args) => {
    const start = performance.now();
    try {
      return answer(...args);
    } finally {
      inGitHub += performance.now() - start;
    }
  };
  const handler: number[] = [];
  const wall: number[] = [];
  const timed =
    <A extends unknown[], R>(fn: (...args: A) => Promise<R>) =>
    async (...args: A) => {
      const start = performance.now();
      const github = inGitHub;
      try {
        return await fn(...args);
      } finally {
        const elapsed = performance.now() - start;
        wall.push(elapsed);
        handler.push(elapsed - (inGitHub - github));
      }
    };
  h.call = timed(h.call.bind(h));
  h.deliver = timed(h.deliver.bind(h));
  try {
    await h.pushGraph(path, text);
    for (let done = 0; done < h.gh.dispatches.length; done++) await runJob(h, h.gh.dispatches[done]!);
    const calls = h.gh.calls.filter(
      (c) => !c.path.includes("/access_tokens") || (c.body as { repositories?: unknown })?.repositories,
    );
    const graphql = calls.filter((c) => c.path === "/graphql").length;
    const attempts = h.gh.dispatches.length;
    const run = `${text.match(/^name: (\S+)/m)![1]}/1`;
    const share = callShares(h, calls);
    const wsIds = Object.keys(h.gh.state(run).workstreams as object).length;
    return [
      name,
      `${attempts} / ${wsIds}`,
      h.gh.state(run).outcome ?? "unfinished",
      String(calls.length - graphql),
      String(graphql),
      (calls.length / attempts).toFixed(1),
      `${share.run} + ${(share.workstream / wsIds).toFixed(1)}/ws + ${(share.attempt / attempts).toFixed(1)}/att`,
      `${percentile(handler, 0.5).toFixed(1)} ms / ${percentile(handler, 0.99).toFixed(1)} ms`,
      `${percentile(wall, 0.99).toFixed(1)} ms`,
    ];
  } finally {
    await h.close();
  }
}

/**
 * Which calls a run costs once (its graph, state branch, tracking issue and status, the app's
 * installation lookup), which each workstream costs (its integration branch and PR), and the rest,
 * which each attempt costs (dispatch, token, task PR, check run, state writes).
 */
function callShares(h: Harness, calls: Harness["gh"]["calls"]) {
  const pullOf = (path: string) => h.gh.pulls.find((p) => path.endsWith(`/pulls/${p.number}/merge`));
  const kind = (c: (typeof calls)[number]): "run" | "workstream" | "attempt" => {
    const body = (c.body ?? {}) as { ref?: string; head?: string };
    if (/\/contents\/|\/git\/(trees|commits)$|\/installation$|\/issues(\/\d+)?$/.test(c.path)) return "run";
    if (/\/issues\/(\d+\/)?comments/.test(c.path)) return "run"; // the status, batched
    if (/\/git\/refs$/.test(c.path)) return body.ref?.includes("agentrelay-state/") ? "run" : "workstream";
    if (/\/git\/ref\//.test(c.path)) return "workstream";
    if (/\/pulls$/.test(c.path) && c.method === "POST")
      return body.head?.endsWith("/integration") ? "workstream" : "attempt";
    if (/\/merge$/.test(c.path))
      return pullOf(c.path)?.head.endsWith("/integration") ? "workstream" : "attempt";
    return "attempt";
  };
  const counts = { run: 0, workstream: 0, attempt: 0 };
  for (const c of calls) counts[kind(c)]++;
  return counts;
}

export async function apiBudgetBench(): Promise<string> {
  // One unmeasured run first, so that the JIT has compiled the handlers (as in a running app).
  await scenario("warm-up", ".workflow/diamond.yaml", DIAMOND, 10_000);
  const rows = [
    await scenario("diamond, 4 workstreams", ".workflow/diamond.yaml", DIAMOND, 10_000),
    await scenario("300 tasks, 3 workstreams", ".workflow/scale.yaml", generateGraph(300), 10_000),
  ];
  return [
    table(
      [
        "graph",
        "attempts / workstreams",
        "outcome",
        "REST",
        "GraphQL",
        "calls/attempt",
        "run + per workstream + per attempt",
        "handler p50 / p99",
        "p99 with GitHub's side",
      ],
      rows,
    ),
    "",
    "handler: each webhook or job request from the moment it is sent until the app answers, less the time",
    "the in-process fake GitHub spent answering the app's calls (it stands for GitHub and the network);",
    "target p99 under 20 ms. The last column keeps that time in (checking each call against GitHub's OpenAPI description included).",
  ].join("\n");
}
