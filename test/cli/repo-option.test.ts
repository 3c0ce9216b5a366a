import { writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { describe, expect, it } from "vitest";
import { repoOptions, UsageError } from "../../src/cli/io.ts";
import { agentrelay, graphFile } from "../support/cli.ts";
import { tempRepo } from "../support/git.ts";
import { API_THEN_CLIENT } from "../support/repositories.ts";

describe("--repo for a graph that spans repositories", () => {
  it("takes the graph's own clone as DIR and each other repository's as NAME=PATH", () => {
    expect(repoOptions(["--repo-is-a-dir", "api=../api", "web=/src/web=2"])).toEqual({
      own: "--repo-is-a-dir",
      elsewhere: { api: "../api", web: "/src/web=2" },
    });
    expect(repoOptions(["."])).toEqual({ own: ".", elsewhere: {} });
    expect(repoOptions([])).toEqual({ own: null, elsewhere: {} });
  });

  it("refuses two clones for the graph's own repository, or for one name", () => {
    expect(() => repoOptions([".", "../other"])).toThrow(
      new UsageError(
        "--repo ../other: the graph's own clone is . already; give the other repositories' clones as --repo NAME=PATH",
      ),
    );
    expect(() => repoOptions([".", "api=../a", "api=../b"])).toThrow(
      "--repo api=../b: 'api' is given twice; give each repository one clone",
    );
  });

  it("reaches the run: a repository the graph names without a clone is refused in one line, nothing run", async () => {
    const [own, api] = await Promise.all([tempRepo(), tempRepo()]);
    const file = graphFile(API_THEN_CLIENT);
    const result = agentrelay("run", file, "--repo", own, "--repo", `api=${api}`, "--scripted-model");
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      "agentrelay: graph 'api-client' has workstreams in octo/web ('web'): give its clone with --repo web=PATH\n",
    );
    const twice = agentrelay("run", file, "--repo", own, "--repo", api, "--scripted-model");
    expect(twice.code).toBe(2);
    expect(twice.stderr).toContain("--repo NAME=PATH");
  });

  it("takes the other clones from --repos FILE, for run and clean, and names the file's line when one is wrong", async () => {
    const [own, api] = await Promise.all([tempRepo(), tempRepo()]);
    const file = graphFile(API_THEN_CLIENT);
    const repos = join(dirname(file), "repos.yaml");
    writeFileSync(repos, `api: ${api}\nweb: web-clone\n`);
    for (const flags of [["run", "--scripted-model"], ["clean"]]) {
      const result = agentrelay(...flags, file, "--repo", own, "--repos", repos);
      expect(result.code).toBe(1);
      expect(result.stderr).toBe(
        `agentrelay: ${repos}:2:6: web: ${join(dirname(repos), "web-clone")}: no such directory; point web in ${repos} at a git repository\n`,
      );
    }
  });
});
