/** A pull request that adds a graph, opened by alice, and the plan check the app answers it with. */
import { type Harness, repository, user } from "../../harness/app.ts";

export async function planCheckOfPull(h: Harness, path: string, graph: string) {
  const gh = h.gh;
  gh.branches.set("feature", gh.branches.get("main")!);
  const head = gh.commit("feature", { [path]: graph });
  gh.openPull(5, "feature");
  const pull_request = {
    number: 5,
    html_url: "https://github.com/octo/demo/pull/5",
    merged: false,
    head: { ref: "feature", sha: head, repo: { full_name: "octo/demo" } },
    base: { ref: "main" },
  };
  const event = {
    action: "opened",
    number: 5,
    pull_request,
    repository: repository(gh),
    sender: user("alice"),
  };
  const answer = await h.deliver("pull_request", event);
  return { answer, check: gh.checkRuns.find((c) => c.name === "agentrelay / plan") };
}
