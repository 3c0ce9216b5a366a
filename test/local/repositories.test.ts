import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join, relative } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { git } from "../../src/attempt/git.ts";
import { runReport } from "../../src/cli/run-report.ts";
import { parseGraph } from "../../src/graph/load.ts";
import { GraphError } from "../../src/graph/errors.ts";
import { LocalRunError } from "../../src/local/repository.ts";
import { runLocal } from "../../src/local/run.ts";
import { demoAgent, manifestFor } from "../../src/scripted/demo-agent.ts";
import {
  promptOf,
  type Script,
  type ScriptedModelServer,
  startScriptedModel,
  toolResults,
} from "../../src/scripted/model-server.ts";
import { tempRepo } from "../support/git.ts";
import { scriptedRun } from "../support/local-run.ts";
import { API_THEN_CLIENT } from "../support/repositories.ts";
import { WAIT_MS } from "../../harness/patience.ts";

/**
 * The demo agent, except that a task told what landed in another repository first copies what it was
 * told into its own change (`landed-elsewhere.json`), as an agent building on it would read it.
 */
const readsLanded: Script = (request) => {
  const manifest = manifestFor(promptOf(request)) as { landed_elsewhere?: { details: string }[] } | null;
  const landed = manifest?.landed_elsewhere?.[0]?.details;
  if (!landed) return demoAgent(request);
  if (toolResults(request).length === 0)
    return {
      tools: [
        {
          name: "Bash",
          input: { command: `cp '${landed}' landed-elsewhere.json`, description: "keep what landed" },
        },
      ],
    };
  // The demo agent's steps, after the copy (its tool call and result taken out of the conversation).
  return demoAgent({ ...request, messages: [request.messages[0]!, ...request.messages.slice(3)] });
};

let server: ScriptedModelServer;
beforeAll(async () => {
  server = await startScriptedModel(readsLanded);
});
afterAll(() => server.close());

describe("a local run of a graph that spans repositories", () => {
  it("lands the API change in its clone, then the client in its own, the client told what landed", async () => {
    const [own, api, web] = await Promise.all([tempRepo(), tempRepo(), tempRepo()]);
    const options = {
      ...scriptedRun(own, ".workflow/api-client.yaml", API_THEN_CLIENT, server.url),
      repositories: { api, web },
      attemptTimeoutMs: WAIT_MS,
      gateTimeoutMs: WAIT_MS,
    };
    const { state, workRoot } = await runLocal(options);
    expect(state.outcome).toBe("succeeded");
    // The report says where each workstream landed.
    const report = runReport(state, own, parseGraph("g.yaml", API_THEN_CLIENT));
    expect(report).toMatch(/ server +merged +merged into main of octo\/api\n/);
    expect(report).toMatch(/ client +merged +merged into main of octo\/web\n/);
    expect(report).toContain(`in ${own} and the clones of octo/api, octo/web`);
    // Each workstream landed in its own clone, and nothing in the graph's own (only its state ref).
    expect(await git(api, ["log", "--format=%s", "main"])).toMatch(
      /^Integrate workstream server\nMerge task add-endpoint/,
    );
    expect(await git(web, ["log", "--format=%s", "main"])).toMatch(
      /^Integrate workstream client\nMerge task use-endpoint/,
    );
    expect(await git(own, ["log", "--format=%s", "main"])).toBe("initial");
    const branches = (clone: string) =>
      git(clone, ["for-each-ref", "--format=%(refname:short)", "refs/heads/agentrelay/"]);
    expect(await branches(api)).toBe(
      "agentrelay/api-client/add-endpoint\nagentrelay/api-client/server/integration",
    );
    expect(await branches(web)).toBe(
      "agentrelay/api-client/client/integration\nagentrelay/api-client/use-endpoint",
    );
    expect(await branches(own)).toBe("");
    // In order: the client's task started after the server's workstream landed in octo/api.
    const timeline = state.timeline.map((e) => `${e.type}:${e.task ?? e.workstream}`);
    expect(timeline.indexOf("dispatch:use-endpoint")).toBeGreaterThan(
      timeline.indexOf("integration_merged:server"),
    );
    // The client's task was told what landed there, as data: the repository, the commit, the summary.
    const apiCommit = await git(api, ["rev-parse", "main"]);
    expect(state.workstreams.server!.landedCommit).toBe(apiCommit);
    const told = JSON.parse(await git(web, ["show", "main:landed-elsewhere.json"])) as {
      note: string;
      landed: unknown[];
    };
    expect(told.note).toContain("other agents' words");
    expect(told.landed).toEqual([
      {
        workstream: "server",
        repository: "octo/api",
        repository_name: "api",
        target_branch: "main",
        pull_request: state.workstreams.server!.pr,
        commit: apiCommit,
        tasks: [
          {
            id: "add-endpoint",
            summary_by_another_agent: expect.stringContaining("Wrote src/items.ts for add-endpoint."),
          },
        ],
      },
    ]);
    const manifest = JSON.parse(
      readFileSync(join(workRoot, "tasks/use-endpoint/work/manifest.json"), "utf8"),
    );
    expect(manifest.landed_elsewhere).toEqual([
      {
        workstream: "server",
        repository: "octo/api",
        pull_request: state.workstreams.server!.pr,
        commit: apiCommit,
        details: join(workRoot, "tasks/use-endpoint/work/landed.json"),
      },
    ]);
    // A new run archives the last one's branches in every clone and lands again, in order; its clones
    // come from a `--repos FILE` this time, paths relative to the file's folder.
    const file = join(own, "..", `repos-${basename(own)}.yaml`);
    writeFileSync(file, `api: ${relative(dirname(file), api)}\nweb: ${web}\n`);
    const { repositories: _, ...fromFile } = options;
    const again = await runLocal({ ...fromFile, repositoriesFile: file, newRun: true });
    expect(again.state.outcome).toBe("succeeded");
    for (const [clone, ws] of [
      [api, "server"],
      [web, "client"],
    ] as const)
      expect(
        await git(clone, ["for-each-ref", "--format=%(refname)", `refs/agentrelay/archive/api-client/1/`]),
      ).toContain(`refs/agentrelay/archive/api-client/1/agentrelay/api-client/${ws}/integration`);
    // The server's own task, with nothing elsewhere to wait for, has neither.
    const first = JSON.parse(readFileSync(join(workRoot, "tasks/add-endpoint/work/manifest.json"), "utf8"));
    expect(first.landed_elsewhere).toBeUndefined();
  });

  it("refuses, before anything is written, a repository without a clone or a clone the graph does not name", async () => {
    const [own, api] = await Promise.all([tempRepo(), tempRepo()]);
    const base = scriptedRun(own, ".workflow/api-client.yaml", API_THEN_CLIENT, server.url);
    await expect(runLocal({ ...base, repositories: { api } })).rejects.toThrow(
      new LocalRunError(
        "graph 'api-client' has workstreams in octo/web ('web'): give its clone with --repo web=PATH",
      ),
    );
    await expect(runLocal({ ...base, repositories: { api, web: api, cli: api } })).rejects.toThrow(
      "--repo cli=",
    );
    await expect(runLocal({ ...base, repositories: { api, web: join(own, "nowhere") } })).rejects.toThrow(
      `--repo web=${join(own, "nowhere")}: no such directory; point --repo web at a git repository`,
    );
    await git(api, ["branch", "-m", "main", "trunk"]);
    await expect(runLocal({ ...base, repositories: { api, web: own } })).rejects.toThrow(
      `workstream 'server' uses branch 'main', which ${api} does not have`,
    );
    expect(await git(own, ["for-each-ref", "refs/agentrelay/"])).toBe("");
  });

  it("refuses a bad --repos file in one line naming the file, line and name, before anything is written", async () => {
    const [own, api, web] = await Promise.all([tempRepo(), tempRepo(), tempRepo()]);
    const base = scriptedRun(own, ".workflow/api-client.yaml", API_THEN_CLIENT, server.url);
    const file = join(mkdtempSync(join(tmpdir(), "agentrelay-repos-")), "repos.yaml");
    const refusal = async (text: string, given: Record<string, string> = {}) => {
      writeFileSync(file, text);
      const error = await runLocal({ ...base, repositories: given, repositoriesFile: file }).then(
        () => null,
        (e: Error) => e,
      );
      expect(error).toBeInstanceOf(Error);
      expect(error!.message).not.toContain("\n");
      return error!.message;
    };
    expect(await refusal(`api: ${api}\nweb: [${web}]\n`)).toBe(
      `${file}:2:6: web: give the path of this repository's clone, as text`,
    );
    expect(await refusal(`- ${api}\n`)).toBe(
      `${file}:1:1: the repositories file must be a mapping: each line \`NAME: PATH\`, a repository the graph names and its clone`,
    );
    expect(await refusal(`api: ${api}\nweb: ${web}\ncli: ${web}\n`)).toBe(
      `${file}:3:6: cli: graph 'api-client' names no repository 'cli' (it names api, web); drop it or declare it under repositories`,
    );
    expect(await refusal(`api: ${api}\nweb: nowhere\n`)).toBe(
      `${file}:2:6: web: ${join(dirname(file), "nowhere")}: no such directory; point web in ${file} at a git repository`,
    );
    expect(await refusal(`api: ${api}\n`)).toBe(
      `graph 'api-client' has workstreams in octo/web ('web'): give its clone with --repo web=PATH or a line 'web: PATH' in ${file}`,
    );
    expect(await refusal(`api: ${api}\nweb: ${web}\n`, { web })).toBe(
      `--repo web=${web}: ${file}:2:6: web gives 'web' too; give each repository one clone`,
    );
    expect(await refusal(`api: ${api}\nweb: ${web}\napi: ${web}\n`)).toBe(`${file}:3:1: duplicate key 'api'`);
    await expect(
      runLocal({ ...base, repositories: {}, repositoriesFile: join(dirname(file), "missing.yaml") }),
    ).rejects.toThrow(
      new LocalRunError(
        `--repos ${join(dirname(file), "missing.yaml")}: no such file; give a YAML file with each line \`NAME: PATH\`, a repository the graph names and its clone`,
      ),
    );
    writeFileSync(file, `api: ${api}\n7: ${web}\n`);
    await expect(runLocal({ ...base, repositoriesFile: file })).rejects.toBeInstanceOf(GraphError);
    expect(await git(own, ["for-each-ref", "refs/agentrelay/"])).toBe("");
  });
});
