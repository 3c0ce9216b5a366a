/**
 * What GitHub checks of a workflow_dispatch's inputs against the workflow it starts, as the fake
 * checks them: the workflow file at the dispatch's `ref` declares its inputs
 * (`on.workflow_dispatch.inputs`: https://docs.github.com/en/actions/reference/workflows-and-actions/workflow-syntax#onworkflow_dispatchinputs),
 * and "Create a workflow dispatch event" (https://docs.github.com/en/rest/actions/workflows#create-a-workflow-dispatch-event)
 * answers 422 to an input the file does not declare, naming them all as a JSON list:
 * `Unexpected inputs provided: ["foo"]` (the answer's body as callers quote it:
 * convictional/trigger-workflow-and-wait#4, benc-uk/workflow-dispatch#80, backstage/backstage#20023,
 * Codex-/return-dispatch#188: a workflow older than its caller), and to a required input the
 * dispatch leaves out where the file gives it no default (Forgejo's end-to-end tests of GitHub's
 * behaviour: "fails if the required inputs are not provided"; the message's wording,
 * `Required input 'x' not provided`, is as `gh workflow run` shows it, not found in a docs page).
 * An input left out that has a default takes it ("If the inputs are omitted, the default values
 * defined in the workflow file are used": "Manually running a workflow").
 */
import { load } from "js-yaml";

/** GitHub's refusal of `inputs` for the workflow `text` (the file at the dispatch's ref), or null. */
export function refusedDispatchInputs(
  text: string | undefined,
  inputs: Record<string, unknown>,
): string | null {
  if (text === undefined) return null;
  let declared: Record<string, { required?: unknown; default?: unknown } | null>;
  try {
    const on = (load(text) as { on?: unknown } | null)?.on;
    // `on: workflow_dispatch`, `on: [push, workflow_dispatch]` or `on: {workflow_dispatch: ...}`.
    const triggers = typeof on === "string" ? [on] : Array.isArray(on) ? on : Object.keys(on ?? {});
    // A workflow without the trigger is refused for that, elsewhere (fake-actions.ts).
    if (!triggers.includes("workflow_dispatch")) return null;
    const dispatch =
      typeof on === "object" && !Array.isArray(on) ? (on as Record<string, unknown>).workflow_dispatch : null;
    const listed =
      typeof dispatch === "object" && dispatch !== null ? (dispatch as { inputs?: unknown }).inputs : null;
    declared = typeof listed === "object" && listed !== null ? (listed as typeof declared) : {};
  } catch {
    return null; // a file GitHub cannot read starts nothing; the fake leaves that to other checks
  }
  const unexpected = Object.keys(inputs).filter((name) => !Object.hasOwn(declared, name));
  if (unexpected.length > 0)
    return `Unexpected inputs provided: ${JSON.stringify(unexpected).replaceAll('","', '", "')}`;
  for (const [name, input] of Object.entries(declared)) {
    if (input?.required === true && input.default === undefined && !Object.hasOwn(inputs, name))
      return `Required input '${name}' not provided`;
  }
  return null;
}
