import { mkdirSync, mkdtempSync, readdirSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { criteriaCode } from "../../src/attempt/criteria.ts";
import { runAttempt } from "../../src/attempt/run-attempt.ts";
import { git } from "../../src/attempt/git.ts";
import {
  type ScriptedModelServer,
  startScriptedModel,
  userPrompts,
} from "../../src/scripted/model-server.ts";
import { attemptSetup } from "../support/attempt.ts";

let server: ScriptedModelServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const WORKFLOW = `name: grow
params:
  n: {range: integer, required: true}
subtasks:
  grow:
    instructions: "Append one line to list.txt; we need {{ n }} lines."
    loop_until:
      status: ENOUGH
      message: When list.txt has enough lines, say so.
      max_iterations: 4
    success_criteria:
      python: "result = len(open('list.txt').read().splitlines()) >= {{ n }}"
      max_retries: 1
      retry_message: "Not done yet: {{ error }}"
`;

/** Appends a line per turn; says ENOUGH after `enoughAfter` turns in the session. */
function appender(enoughAfter: number) {
  return (request: Parameters<typeof userPrompts>[0]) => {
    const turns = userPrompts(request).length;
    const results = request.messages.filter(
      (m) =>
        m.role === "user" && typeof m.content !== "string" && m.content.some((b) => b.type === "tool_result"),
    ).length;
    if (results < turns)
      return {
        tools: [{ name: "Bash", input: { command: "echo line >> list.txt", description: "append" } }],
      };
    return {
      text:
        turns >= enoughAfter
          ? "Appended.\nCOMPLETION_STATUS: ENOUGH"
          : "Appended one line.\nCOMPLETION_STATUS: COMPLETE",
    };
  };
}

describe("cyberian steps with the real agent", () => {
  it("loop until the status line appears, then pass their success criteria", async () => {
    server = await startScriptedModel(appender(3));
    const ctx = await attemptSetup(WORKFLOW, "grow", server.url);
    ctx.params = { n: 3 };
    const result = await runAttempt(ctx);
    expect(result).toMatchObject({ outcome: "succeeded", reason: null });
    expect(await git(ctx.repoDir, ["show", "HEAD:list.txt"])).toBe("line\nline\nline");
    // All iterations ran in one session: the last request carries every prompt.
    const prompts = userPrompts(server.requests.at(-1)!);
    expect(prompts.filter((p) => p.includes("Append one line to list.txt; we need 3 lines."))).toHaveLength(
      3,
    );
  });

  it("fail when the loop reaches its cap", async () => {
    server = await startScriptedModel(appender(99));
    const ctx = await attemptSetup(WORKFLOW, "grow", server.url);
    ctx.params = { n: 3 };
    const result = await runAttempt(ctx);
    expect(result).toMatchObject({
      outcome: "failed",
      reason: "loop_until: the status ENOUGH did not appear within 4 iterations",
    });
  });

  it("give the criteria's real failure back in the retry message", async () => {
    server = await startScriptedModel(appender(2));
    const ctx = await attemptSetup(WORKFLOW, "grow", server.url);
    ctx.params = { n: 3 };
    const result = await runAttempt(ctx);
    expect(result.outcome).toBe("succeeded");
    const retry = userPrompts(server.requests.at(-1)!).find((p) => p.startsWith("Not done yet:"));
    expect(retry).toContain("Not done yet: Success criteria validation failed: result = False");
  });

  it("fail clearly for an undeclared provider and for a missing param", async () => {
    server = await startScriptedModel(appender(1));
    const provider = await attemptSetup(
      "name: p\nsubtasks:\n  fetch:\n    provider_call: {provider: deep-research-client, method: research}\n",
      "fetch",
      server.url,
    );
    expect((await runAttempt(provider)).reason).toBe(
      "provider 'deep-research-client' is not declared: add it to .workflow/providers.yaml as providers: {deep-research-client: {command: [program, args...]}}",
    );
    const missing = await attemptSetup(WORKFLOW, "grow", server.url);
    expect((await runAttempt(missing)).reason).toBe(
      "template error in instructions: undefined variable 'n'; give it a value (--param n=VALUE or the params file)",
    );
  });
});

describe("paths a workflow names", () => {
  it("are refused at run time when a symbolic link leads outside the repository", async () => {
    server = await startScriptedModel(appender(1));
    const outside = mkdtempSync(join(tmpdir(), "agentrelay-outside-"));
    const ctx = await attemptSetup(
      "name: p\nsubtasks:\n  fetch:\n    provider_call: {provider: echo, method: m, output_file: out/result.json}\n",
      "fetch",
      server.url,
    );
    mkdirSync(join(ctx.repoDir, ".workflow"), { recursive: true });
    writeFileSync(
      join(ctx.repoDir, ".workflow/providers.yaml"),
      `providers: {echo: {command: [${JSON.stringify(process.execPath)}, -e, "process.stdout.write('{}')"]}}\n`,
    );
    symlinkSync(outside, join(ctx.repoDir, "out"));
    const result = await runAttempt(ctx);
    expect(result).toMatchObject({
      outcome: "failed",
      reason: "output_file 'out/result.json' leads outside the repository through a symbolic link",
    });
    expect(readdirSync(outside)).toEqual([]);

    const script = await attemptSetup(
      "name: c\nsubtasks:\n  s:\n    instructions: hi\n    success_criteria: {script: checks/ok.py}\n",
      "s",
      server.url,
    );
    writeFileSync(join(outside, "ok.py"), "result = True\n");
    symlinkSync(outside, join(script.repoDir, "checks"));
    expect((await runAttempt(script)).reason).toBe(
      "Success criteria validation failed after 1 attempt(s): success criteria script 'checks/ok.py' leads outside the repository through a symbolic link",
    );
  });
});

describe("success criteria code", () => {
  it("refers to params as data, inside and outside string literals", () => {
    const { code, values } = criteriaCode(
      "with open('{{workdir}}/S.md') as f:\n    ok = len(f.read()) <= {{ n // 2 }}  # {{ ignored }}\n",
      { workdir: "tmp", n: 3001 },
    );
    // A number is printed as its literal; text is data; a comment renders as cyberian renders it.
    expect(code).toBe(
      "with open(('' + str(__agentrelay_values[0]) + '/S.md')) as f:\n    ok = len(f.read()) <= 1500  # ",
    );
    expect(values).toEqual(["tmp"]);
  });
});
