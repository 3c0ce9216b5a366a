/**
 * The scripted model of the end-to-end runs: like the demo agent it reads the attempt's manifest
 * and writes a note for its task, then behaves as the test asks for that task and attempt
 * (complete, raise a design concern, give up, or take its time). A resolution keeps both sides.
 */
import { manifestFor, resolveKeepingBoth } from "../src/scripted/demo-agent.ts";
import { promptOf, type Script, toolResults } from "../src/scripted/model-server.ts";

export type Behaviour = "complete" | "concern" | "give-up" | "slow";

export function e2eAgent(
  behaviour: (task: string, attempt: number) => Behaviour = () => "complete",
  /** The file a task writes its note to (tasks that share one change the same lines). */
  noteFile = (task: string) => `notes/${task}.md`,
): Script {
  return (request) => {
    const prompt = promptOf(request);
    if (prompt.includes("Resolve the merge conflicts:"))
      return resolveKeepingBoth(prompt, toolResults(request).length);
    const manifest = manifestFor(prompt);
    if (!manifest) return { text: "Nothing to do." };
    const id = manifest.task.id;
    const attempt = manifest.execution.attempt_num + 1;
    const hand = {
      complete: "agentrelay-complete",
      concern: 'agentrelay-concern --message "the interface needs a second look" && agentrelay-complete',
      "give-up": 'agentrelay-failed --reason "cannot be done as specified"',
      slow: "sleep 60 && agentrelay-complete",
    }[behaviour(id, attempt)];
    const steps = [
      `mkdir -p notes && printf 'task ${id}, attempt ${attempt}\\n' >> ${noteFile(id)}`,
      `agentrelay-summary --message "Wrote ${noteFile(id)}." && ${hand}`,
    ];
    const done = toolResults(request).length;
    return done < steps.length
      ? { tools: [{ name: "Bash", input: { command: steps[done]!, description: `step ${done + 1}` } }] }
      : { text: `Task ${id} is done.` };
  };
}
