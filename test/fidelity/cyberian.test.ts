/**
 * cyberian fidelity, table-driven: what cyberian accepts and rejects, the order its steps run in,
 * the text its templates render (byte for byte as Jinja2 renders it over Python values), the values
 * `--param` gives, what success criteria decide, how loops and statuses end a step, and every
 * workflow in ../shared/fixtures/cyberian run end to end by the real Claude Code with a scripted model.
 * Where we differ on purpose, the case says so; docs/graph-language.md lists each difference with its reason.
 */
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { criteriaCode, runCriteria } from "../../src/attempt/criteria.ts";
import { runCyberianStep } from "../../src/attempt/cyberian-step.ts";
import { GraphError } from "../../src/graph/errors.ts";
import { parseGraph } from "../../src/graph/load.ts";
import { mergeParams, parseParamPairs, parseParamsFile } from "../../src/graph/params.ts";
import { runLocal } from "../../src/local/run.ts";
import { cyberianPrompt, renderCyberian } from "../../src/protocol/cyberian-prompt.ts";
import {
  type ScriptedModelServer,
  type Script,
  startScriptedModel,
  userPrompts,
} from "../../src/scripted/model-server.ts";
import { fixture } from "../support/fixtures.ts";
import { tempRepo } from "../support/git.ts";
import { scriptedRun } from "../support/local-run.ts";
import { describeNeeding, NO_FIXTURES } from "../support/skips.ts";
import { WAIT_MS } from "../../harness/patience.ts";

const workflow = (body: string) => `name: w\n${body}`;
const errorsOf = (text: string): string[] => {
  try {
    parseGraph("w.yaml", text);
    return [];
  } catch (error) {
    if (!(error instanceof GraphError)) throw error;
    return error.issues.map((i) => `${i.line}:${i.column}: ${i.path ? `${i.path}: ` : ""}${i.message}`);
  }
};

describe("what cyberian accepts and rejects", () => {
  const cases: { case: string; yaml: string; errors: string[] | RegExp; differs?: string }[] = [
    {
      case: "a workflow of subtasks",
      yaml: workflow("subtasks:\n  a:\n    instructions: do a\n"),
      errors: [],
    },
    {
      case: "a subtask named by an unquoted number (PyYAML reads a number; cyberian wants text)",
      yaml: workflow("subtasks:\n  1:\n    instructions: do it\n"),
      errors: ["3:3: subtasks.1: subtask name 1 is not text: quote it ('1':)"],
    },
    {
      case: "a subtask named by a quoted number",
      yaml: workflow("subtasks:\n  '1':\n    instructions: do it\n"),
      errors: [],
    },
    {
      case: "a null subtask, located at its key (columns from 1)",
      yaml: workflow("subtasks:\n  a:\n  b:\n    instructions: do b\n"),
      errors: ["3:3: subtasks.a: must be a mapping"],
    },
    {
      case: "empty instructions are skipped, as cyberian skips them",
      yaml: workflow('subtasks:\n  a:\n    instructions: ""\n  b:\n    instructions: do b\n'),
      errors: [],
    },
    {
      case: "an unknown key inside a block",
      yaml: workflow("subtasks:\n  a:\n    instructions: x\n    loop_until: {status: DONE, mesage: m}\n"),
      errors: /subtasks\.a\.loop_until: contains unknown key\(s\): mesage \(did you mean `message`\?\)/,
    },
    {
      case: "a duplicate key",
      yaml: workflow("subtasks:\n  a:\n    instructions: x\n    instructions: y\n"),
      errors: /duplicate key 'instructions'/,
    },
    {
      case: "a workflow with nothing to run",
      yaml: workflow("subtasks:\n  a:\n    description: only words\n"),
      errors: [
        "1:1: the workflow has no task with 'instructions' or a 'provider_call', so there is nothing to run",
      ],
      differs: "cyberian runs nothing and reports success",
    },
    {
      case: "instructions and a provider_call on one task",
      yaml: workflow("subtasks:\n  a:\n    instructions: x\n    provider_call: {provider: p, method: m}\n"),
      errors: [
        "5:5: subtasks.a.provider_call: a task has either 'instructions' or a 'provider_call', not both",
      ],
      differs: "cyberian would run one and silently ignore the other",
    },
    {
      case: "loop_until on a task without instructions",
      yaml: workflow(
        "subtasks:\n  a:\n    loop_until: {status: DONE, message: m}\n    subtasks:\n      b: {instructions: x}\n",
      ),
      errors: ["4:5: subtasks.a.loop_until: 'loop_until' needs 'instructions' on the same task"],
      differs: "cyberian ignores the loop",
    },
    {
      case: "numbers and booleans written as text, as pydantic's lax mode reads them",
      yaml: workflow(
        "requires_workdir: 'On'\nparams:\n  t: {range: str, required: 'yes'}\nsubtasks:\n  a:\n    instructions: '{{ t }}'\n" +
          "    loop_until: {status: DONE, message: m, max_iterations: '3'}\n" +
          "    success_criteria: {python: 'result = True', max_retries: 2.0}\n",
      ),
      errors: [],
    },
    {
      case: "text that pydantic's lax mode does not read as a number or a boolean",
      yaml: workflow(
        "params:\n  t: {range: str, required: maybe}\nsubtasks:\n  a:\n    instructions: 3\n" +
          "    success_criteria: {python: 'result = True', max_retries: '2.5'}\n",
      ),
      errors: [
        "3:29: params.t.required: must be a boolean",
        "6:19: subtasks.a.instructions: must be a string",
        "7:62: subtasks.a.success_criteria.max_retries: must be an integer",
      ],
    },
    {
      case: "a subtask whose id another subtask's path also gives",
      yaml: workflow(
        "subtasks:\n  a.b:\n    instructions: one\n  a:\n    subtasks:\n      b: {instructions: two}\n",
      ),
      errors: [
        "7:7: subtasks.a.subtasks.b: becomes task id 'a.b', which subtask 'a.b' (line 3) has too (ids join subtask names with '.'); rename one of them",
      ],
      differs: "cyberian runs both: it has no ids, while here an id names the step's branch",
    },
    {
      case: "a top-level subtask named root beside the workflow's own instructions",
      yaml: workflow("instructions: first\nsubtasks:\n  root:\n    instructions: second\n"),
      errors: [
        "4:3: subtasks.root: becomes task id 'root', which is the id of the workflow's own instructions; rename the subtask",
      ],
      differs: "cyberian runs both",
    },
    {
      case: "a template syntax error in a later step",
      yaml: workflow("subtasks:\n  a:\n    instructions: fine\n  b:\n    instructions: 'bad {{ x '\n"),
      errors: [
        "6:19: subtasks.b.instructions: template error: syntax error: unexpected end of input, expected end of variable block",
      ],
      differs: "cyberian reports it when step b runs, after step a has run and been paid for",
    },
  ];
  it.each(cases)("$case", ({ yaml, errors }) => {
    const found = errorsOf(yaml);
    if (errors instanceof RegExp) expect(found.join("\n")).toMatch(errors);
    else expect(found).toEqual(errors);
  });
});

describe("values read as pydantic reads them", () => {
  it("turns text into the numbers and booleans it spells", () => {
    const graph = parseGraph(
      "w.yaml",
      workflow(
        "params:\n  t: {range: str, required: 'off'}\nsubtasks:\n  a:\n    instructions: '{{ t }}'\n" +
          "    loop_until: {status: DONE, message: m, max_iterations: ' 3 '}\n" +
          "    success_criteria: {python: 'result = True', max_retries: '+2'}\n",
      ),
    );
    const step = graph.tasks[0]!.cyberian!;
    expect(step.loopUntil!.maxIterations).toBe(3);
    expect(step.successCriteria!.maxRetries).toBe(2);
    expect(graph.cyberian!.params[0]!.required).toBe(false);
  });
});

describe("the order steps run in", () => {
  it.each([
    {
      yaml: workflow(
        "instructions: first\nsubtasks:\n  b:\n    instructions: b\n    subtasks:\n      z: {instructions: z}\n      a: {instructions: a}\n  '10':\n    instructions: ten\n  '2':\n    instructions: two\n",
      ),
      // Depth first, a parent before its subtasks, keys in the order written (numbers included).
      order: ["root", "b", "b.z", "b.a", "10", "2"],
    },
  ])("depth first, in written order: $order", ({ yaml, order }) => {
    expect(parseGraph("w.yaml", yaml).tasks.map((t) => t.id)).toEqual(order);
  });
});

describe("rendered text, byte for byte as Jinja2 renders it over Python values", () => {
  // Expected texts are Jinja2's (jinja2.Template(t).render(**yaml.safe_load(params))).
  it.each([
    {
      template: "Flag {{ flag }}, none {{ nothing }}, ratio {{ ratio }}, n {{ n }}",
      params: "flag: true\nnothing: null\nratio: 1.0\nn: 3\n",
      text: "Flag True, none None, ratio 1.0, n 3",
    },
    {
      template: "{{ items }} and {{ mapping }}",
      params: 'items: [a, 1, 2.5, true, null, "it\'s"]\nmapping: {k: false, s: x}\n',
      text: "['a', 1, 2.5, True, None, \"it's\"] and {'k': False, 's': 'x'}",
    },
    {
      template: "\n\nLeading blank lines stay.\n{{ topic | upper }}\n",
      params: "topic: owls\n",
      text: "\n\nLeading blank lines stay.\nOWLS",
    },
    {
      template: "{% for x in items %}{{ loop.index }}.{{ x }} {% endfor %}",
      params: "items: [a, b]\n",
      text: "1.a 2.b ",
    },
    {
      template: "{{ n // 2 }} {{ n / 2 }} {{ text.strip() }}|",
      params: "n: 7\ntext: '  padded  '\n",
      text: "3 3.5 padded|",
    },
    {
      // Jinja2's own way of printing its delimiters: string literals hold them, raw blocks keep them.
      template:
        "A {{ '{{' }} B {{ '}}' }} C {{ \"{%\" }} {% raw %}{{ x }}{% endraw %} {# a }} note #}D {% set s = '}}' %}{{ s }}{{- ' E' -}} F",
      params: "x: unused\n",
      text: "A {{ B }} C {% {{ x }} D }} EF",
    },
    {
      template: "Half {{ ratio * 0.5 }}; twice {{ ratio * 2 }}",
      params: "ratio: 1.0\n",
      text: "Half 0.5; twice 2.0",
    },
  ])("$template", ({ template, params, text }) => {
    expect(renderCyberian(template, parseParamsFile("w.params.yaml", params), "instructions")).toBe(text);
  });

  it("assembles a step's prompt in cyberian's order, the rendered instructions unchanged", () => {
    const [step] = parseGraph(
      "w.yaml",
      workflow(
        "system_instructions: 'Work in {{ dir }}.'\nsubtasks:\n  a:\n    instructions: \"\\n\\nStudy {{ topic }}.\"\n    loop_until: {status: DONE, message: Say DONE when done.}\n",
      ),
    ).tasks.map((t) => t.cyberian!);
    const prompt = cyberianPrompt(step!, { params: { dir: "tmp", topic: "owls" } });
    expect(prompt.startsWith("Work in tmp.\n\n\n\nStudy owls.\n\nSay DONE when done.\n\n")).toBe(true);
  });

  it("names an undefined variable and where it is used", () => {
    expect(() =>
      renderCyberian("Study {{ topic }}\nthen {{ next_step }}", { topic: "x" }, "instructions"),
    ).toThrow(
      "instructions: undefined variable 'next_step' (template line 2); give it a value (--param next_step=VALUE or the params file)",
    );
  });
});

describe("--param values, as PyYAML's safe_load reads them", () => {
  it.each([
    { raw: "k=null", value: null },
    { raw: "k=", value: null },
    { raw: "k=~", value: null },
    { raw: "k=yes", value: true },
    { raw: "k=on", value: true },
    { raw: "k=y", value: "y" },
    { raw: "k=010", value: 8 },
    { raw: "k=0x1F", value: 31 },
    { raw: "k=1e3", value: "1e3" },
    { raw: "k='quoted'", value: "quoted" },
  ])("$raw", ({ raw, value }) => {
    expect(parseParamPairs([raw]).k).toEqual(value);
  });

  it("keeps 1.0 a float, from --param and from the params file, whichever is given last", () => {
    expect(renderCyberian("{{ k }}", parseParamPairs(["k=1.0"]), "x")).toBe("1.0");
    expect(renderCyberian("{{ k }}", mergeParams(parseParamsFile("p.yaml", "k: 2.0\n"), {}), "x")).toBe(
      "2.0",
    );
    expect(
      renderCyberian(
        "{{ k }}",
        mergeParams(parseParamsFile("p.yaml", "k: 2.0\n"), parseParamPairs(["k=3"])),
        "x",
      ),
    ).toBe("3");
    expect(renderCyberian("{{ k }}|{{ j }}", parseParamPairs(["k=null", "j="]), "x")).toBe("None|None");
  });
});

describe("success criteria, as cyberian decides them, with params as data", () => {
  const dir = mkdtempSync(join(tmpdir(), "agentrelay-criteria-"));
  writeFileSync(join(dir, "SUMMARY.md"), "a short summary");
  const run = (python: string, params: Record<string, unknown>) =>
    runCriteria({ python, script: null }, params, {
      cwd: dir,
      workflowDir: dir,
      timeoutMs: WAIT_MS,
      env: { PATH: process.env.PATH },
    });

  it.each([
    {
      case: "reads a file named by a param",
      python: "result = len(open('{{ f }}').read()) <= {{ n // 2 }}",
      params: { f: "SUMMARY.md", n: 40 },
      passed: true,
    },
    {
      case: "an expression with quotes inside",
      python: "result = {{ items.split(',') | length }} == 3",
      params: { items: "a,b,c" },
      passed: true,
    },
    {
      case: "an {% if %} block shapes the code",
      python: "{% if strict %}result = False{% else %}result = True{% endif %}",
      params: { strict: false },
      passed: true,
    },
    {
      case: "an undefined variable renders as nothing",
      python: "x = '{{ missing }}'\nresult = x == ''",
      params: {},
      passed: true,
    },
    {
      case: "a boolean param is Python's",
      python: "result = {{ flag }} is True",
      params: { flag: true },
      passed: true,
    },
    {
      case: "a param that looks like code stays a string",
      python: "result = '{{ p }}'.startswith(\"')\")",
      params: { p: "'); import os; os.system('touch pwned'); ('" },
      passed: true,
    },
    {
      case: "Jinja's delimiters written as Jinja2 writes them",
      python:
        "a = '{{ '}}' }}'\nb = '{% raw %}{{ x }}{% endraw %}'\nresult = a == '}}' and b == '{{ '{{' }} x }}'",
      params: {},
      passed: true,
    },
    { case: "result False fails", python: "result = False", params: {}, passed: false },
    { case: "no result fails", python: "x = 1", params: {}, passed: false },
  ])("$case", async ({ python, params, passed }) => {
    const verdict = await run(python, params);
    expect(verdict.passed, verdict.error).toBe(passed);
  });

  it("never pastes text into the code", () => {
    const { code, values } = criteriaCode("result = '{{ p }}' == {{ q }}", { p: "x'y", q: "z" });
    expect(code).toBe("result = ('' + str(__agentrelay_values[0]) + '') == __agentrelay_values[1]");
    expect(values).toEqual(["x'y", "z"]);
  });

  it("left no file the param tried to create", async () => {
    await run("result = '{{ p }}' != ''", { p: "'); open('pwned', 'w'); ('" });
    expect(() => readFileSync(join(dir, "pwned"))).toThrow();
  });
});

describe("loops and statuses", () => {
  const step = parseGraph(
    "w.yaml",
    workflow("subtasks:\n  a:\n    instructions: go\n    loop_until: {status: DONE, message: Say DONE.}\n"),
  ).tasks[0]!.cyberian!;
  const answers = (...texts: string[]) => {
    let i = 0;
    return async () => ({
      ok: true as const,
      finalText: texts[Math.min(i++, texts.length - 1)]!,
      sessionId: "s",
      turns: 1,
      costMicros: 0,
    });
  };
  const runStep = (agent: ReturnType<typeof answers>) =>
    runCyberianStep({
      step,
      params: {},
      repoDir: tmpdir(),
      workflowDir: tmpdir(),
      loopCap: 5,
      session: null,
      timeoutMs: 5_000,
      env: {},
      agent: agent as never,
      log: () => {},
    });

  it.each([
    {
      case: "the loop's status line ends it",
      texts: ["not yet\nCOMPLETION_STATUS: COMPLETE", "COMPLETION_STATUS: DONE"],
      result: null,
    },
    {
      case: "ERROR is checked first and fails at once",
      texts: ["COMPLETION_STATUS: ERROR"],
      result: "the agent reported COMPLETION_STATUS: ERROR",
    },
    {
      case: "the status word inside a sentence does not end it (cyberian's would)",
      texts: ["I am not DONE yet.\nCOMPLETION_STATUS: COMPLETE"],
      result: "loop_until: the status DONE did not appear within 5 iterations",
    },
  ])("$case", async ({ texts, result }) => {
    expect(await runStep(answers(...texts))).toBe(result);
  });
});

/**
 * The scripted model for the fixtures: each step writes the Markdown files its prompt names (short,
 * one line), then ends with the status the prompt asks for: the loop's, else COMPLETE.
 */
const writesNamedFiles: Script = (request) => {
  const prompt = userPrompts(request).at(-1) ?? "";
  let sinceLastPrompt = 0;
  for (const m of [...request.messages].reverse()) {
    if (m.role !== "user") continue;
    if (typeof m.content === "string" || m.content.some((b) => b.type === "text")) break;
    sinceLastPrompt += m.content.filter((b) => b.type === "tool_result").length;
  }
  const files = [...new Set(prompt.match(/[\w.-]+(?:\/[\w.-]+)*\.md\b/g) ?? [])];
  if (sinceLastPrompt === 0 && files.length > 0) {
    const command = files
      .map((f) => `mkdir -p "$(dirname '${f}')" && printf 'Short summary.' > '${f}'`)
      .join(" && ");
    return { tools: [{ name: "Bash", input: { command, description: "write the files" } }] };
  }
  const loop = /says exactly `COMPLETION_STATUS: (\w+)` instead/.exec(prompt)?.[1];
  return { text: `Done.\nCOMPLETION_STATUS: ${loop ?? "COMPLETE"}` };
};

describeNeeding(NO_FIXTURES, "every cyberian fixture workflow, end to end", () => {
  let server: ScriptedModelServer;
  beforeAll(async () => {
    server = await startScriptedModel(writesNamedFiles);
  });
  afterAll(() => server.close());

  const PARAMS = [
    "query=owls",
    "workdir=work",
    "input_number=10",
    "agent_mode=fast",
    "pdf_url=https://example.com/a.pdf",
    "max_chars_step1=1000",
  ];

  it.each([
    // The loop after the first step, in the session the first step began (agent_lifecycle reuse).
    {
      file: "tests/examples/deep-research.yaml",
      statuses: { initial_search: "merged", iterate: "completed" },
    },
    {
      file: "tests/examples/simple-math.yaml",
      statuses: { step1: "completed", step2: "completed", step3: "completed" },
    },
    {
      file: "tests/examples/pdf-summarize.yaml",
      statuses: { step1: "merged", step2: "merged", step3: "merged" },
    },
    {
      file: "tests/examples/system-instructions-demo.yaml",
      statuses: { research: "completed", analyze: "completed", summarize: "completed" },
    },
    {
      file: "third-party/monarch-initiative+deep-research-client/src/deep_research_client/workflows/quick-test.yaml",
      statuses: { quick_research: "merged" },
    },
    // Its abstracts are not in the fixtures: the precondition stops it before the agent runs.
    { file: "examples/tag-documents/tag-workflow.yaml", statuses: { tag_abstracts: "failed" } },
  ])("$file", async ({ file, statuses }) => {
    const repo = await tempRepo();
    mkdirSync(join(repo, ".workflow"));
    const path = join(repo, ".workflow", basename(file));
    copyFileSync(fixture("cyberian", file), path);
    const text = readFileSync(path, "utf8");
    const { state } = await runLocal({
      ...scriptedRun(repo, path, text, server.url),
      params: parseParamPairs(PARAMS),
      attemptTimeoutMs: WAIT_MS,
      gateTimeoutMs: WAIT_MS,
    });
    for (const [task, status] of Object.entries(statuses))
      expect(state.tasks[task]?.status, task).toBe(status);
    if (file.includes("tag-workflow"))
      expect(state.tasks.tag_abstracts!.reason).toBe(
        "precondition failed: 0 file(s) match 'abstracts/*.txt' in the checkout",
      );
  });

  it("a farm configuration is named for what it is, not run", () => {
    expect(errorsOf(readFileSync(fixture("cyberian", "tests/examples/test-farm.yaml"), "utf8"))).toEqual([
      "1:1: this is a cyberian farm configuration (servers:), not a workflow; nothing here can run",
    ]);
  });
});
