/**
 * What a scenario (scenario-file.ts) runs: its graph (one auto-merging workstream per entry, each task
 * gated, the scenario's graph keys passed through) and the scripted model that plays its agents: a
 * task runs its `agent` command and hands back; a repair runs the scenario's `repair`; a resolution
 * its `resolution` (or keeps both sides of every conflict).
 */
import { dump } from "js-yaml";
import { manifestFor, resolveKeepingBoth } from "../src/scripted/demo-agent.ts";
import { promptOf, type Script, toolResults } from "../src/scripted/model-server.ts";
import type { Scenario } from "./scenario-file.ts";

/** A task's id in the graph: the scenario's name first, so that one model serves many scenarios. */
export const graphTaskId = (scenario: Pick<Scenario, "name">, task: string): string =>
  `${scenario.name}_${task}`;

/** The scenario's graph, with verification on or off. */
export function scenarioGraph(scenario: Scenario, options: { verify: boolean }): string {
  const graph: Record<string, unknown> = {
    name: scenario.name,
    max_concurrency: scenario.workstreams.length,
    max_repair_attempts: 1,
    ...scenario.graph,
    ...(options.verify ? {} : { verify_integration: false }),
    workstreams: scenario.workstreams.map((w) => ({ id: w.id, auto_merge: true, ...w.graph })),
    tasks: scenario.workstreams.flatMap((w) =>
      w.tasks.map((t) => {
        const gate = t.gate === undefined ? scenario.gate : t.gate;
        return {
          id: graphTaskId(scenario, t.id),
          workstream_id: w.id,
          description: t.description,
          ...(gate ? { completion_gate: gate, max_gate_attempts: 1 } : {}),
          // The graph language's key is `dependencies` (`depends_on` is refused there as an unknown key).
          ...(t.depends_on ? { dependencies: t.depends_on.map((d) => graphTaskId(scenario, d)) } : {}),
          ...(t.tagged_paths ? { tagged_paths: t.tagged_paths } : {}),
          ...t.graph,
        };
      }),
    ),
  };
  return dump(graph, { lineWidth: -1, noRefs: true });
}

const bash = (command: string, description: string) => ({
  tools: [{ name: "Bash", input: { command, description } }],
});

/** The scripted model of every scenario given: a task's command, a repair's, a resolution's, by graph. */
export function scenarioAgent(scenarios: Scenario[]): Script {
  const edits = new Map(
    scenarios.flatMap((s) =>
      s.workstreams.flatMap((w) => w.tasks.map((t) => [graphTaskId(s, t.id), t.agent])),
    ),
  );
  const byName = new Map(scenarios.map((s) => [s.name, s]));
  return (request) => {
    const prompt = promptOf(request);
    const done = toolResults(request).length;
    const repairing = /Repair `agentrelay\/([^/`]+)\//.exec(prompt);
    if (repairing) {
      const fix = byName.get(repairing[1]!)?.repair ?? null;
      if (done === 0) return bash(fix ?? "echo 'I do not see how to fix this' > REPAIR-NOTES.txt", "repair");
      return { text: fix ? "Made the code and the other workstream's change agree." : "I could not fix it." };
    }
    const resolving = /Resolve the merge conflicts: .*`agentrelay\/([^/`]+)\//.exec(prompt);
    if (resolving) {
      const own = byName.get(resolving[1]!)?.resolution;
      if (!own) return resolveKeepingBoth(prompt, done);
      return done === 0 ? bash(own, "resolve") : { text: "Resolved the conflicts." };
    }
    const manifest = manifestFor(prompt);
    const edit = manifest ? edits.get(manifest.task.id) : undefined;
    if (!manifest || edit === undefined) return { text: "Nothing to do." };
    // One tool call: the edit and the hand-back (each model turn costs the CLI a round).
    const handBack = `agentrelay-summary --message ${JSON.stringify(`Did ${manifest.task.description}`)} && agentrelay-complete`;
    return done === 0 ? bash(`(set -e\n${edit}\n) && ${handBack}`, "edit and hand back") : { text: "Done." };
  };
}
