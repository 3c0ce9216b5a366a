/**
 * One case per validation rule: a small graph file and the exact errors it must produce, each as
 * `LINE:COL: path: message` (1-based, at the YAML node at fault).
 */
export interface RuleCase {
  rule: string;
  yaml: string;
  errors: string[];
}

const T = "name: g\ntasks:\n";
/** Ids for a dependency list longer than the ones searched by a scan. */
const LONG = Array.from({ length: 20 }, (_, i) => `d${i}`);

export const RULE_CASES: RuleCase[] = [
  {
    rule: "root must be a mapping",
    yaml: "- a\n- b\n",
    errors: ["1:1: the graph must be a mapping (YAML object) at the top level"],
  },
  {
    rule: "name is required",
    yaml: "tasks:\n  - id: a\n    description: x\n",
    errors: ["1:1: name: is required"],
  },
  {
    rule: "name must be a non-empty string",
    yaml: "name: '  '\ntasks:\n  - id: a\n    description: x\n",
    errors: ["1:7: name: must be a non-empty string"],
  },
  {
    rule: "graph name must be a safe id",
    yaml: "name: 'my graph'\ntasks:\n  - id: a\n    description: x\n",
    errors: [
      "1:7: name: 'my graph' is not a safe graph name: use 1-80 letters, digits, '_', '-' or '.', starting with a letter or digit",
    ],
  },
  { rule: "tasks is required", yaml: "name: g\n", errors: ["1:1: tasks: is required"] },
  { rule: "tasks must be a list", yaml: "name: g\ntasks: {a: 1}\n", errors: ["2:8: tasks: must be a list"] },
  {
    rule: "tasks must not be empty",
    yaml: "name: g\ntasks: []\n",
    errors: ["2:8: tasks: must contain at least one task"],
  },
  {
    rule: "unknown root keys",
    yaml: `${T}  - id: a\n    description: x\ntmux_session: s\nzeta: 1\n`,
    errors: ["5:1: contains unknown key(s): tmux_session, zeta"],
  },
  {
    rule: "unknown task keys",
    yaml: `${T}  - id: a\n    description: x\n    dependancies: [b]\n`,
    errors: ["5:5: tasks[0]: contains unknown key(s): dependancies (did you mean `dependencies`?)"],
  },
  {
    rule: "a key named as other task runners name it: ours",
    yaml: `${T}  - id: a\n    description: x\n    depends_on: [b]\n`,
    errors: ["5:5: tasks[0]: contains unknown key(s): depends_on (did you mean `dependencies`?)"],
  },
  {
    rule: "a mistyped required key is said once, where the typo is",
    yaml: "# a comment\nname: g\n\ntaskz:\n  - id: a\n    description: x\n",
    errors: ["4:1: contains unknown key(s): taskz (did you mean `tasks`?)"],
  },
  {
    rule: "unknown task keys with nothing near: no guess",
    yaml: `${T}  - id: a\n    description: x\n    colour: red\n`,
    errors: ["5:5: tasks[0]: contains unknown key(s): colour"],
  },
  { rule: "task must be a mapping", yaml: `${T}  - a\n`, errors: ["3:5: tasks[0]: must be a mapping"] },
  {
    rule: "task id is required",
    yaml: `${T}  - description: x\n`,
    errors: ["3:5: tasks[0].id: is required"],
  },
  {
    rule: "task id must be safe",
    yaml: `${T}  - id: 'a;rm -rf ~'\n    description: x\n`,
    errors: [
      "3:9: tasks[0].id: 'a;rm -rf ~' is not a safe id: use 1-80 letters, digits, '_', '-' or '.', starting with a letter or digit",
    ],
  },
  {
    rule: "task id may not hold '..'",
    yaml: `${T}  - id: a..b\n    description: x\n`,
    errors: ["3:9: tasks[0].id: 'a..b' is not a safe id: it may not contain '..' or end with '.' or '.lock'"],
  },
  {
    rule: "duplicate task id",
    yaml: `${T}  - id: a\n    description: x\n  - id: a\n    description: y\n`,
    errors: ["5:9: tasks[1].id: duplicate task id 'a'"],
  },
  {
    rule: "task ids differing only by case",
    yaml: `${T}  - id: Task\n    description: x\n  - id: task\n    description: y\n`,
    errors: ["5:9: tasks[1].id: task id 'task' differs from 'Task' only by case"],
  },
  {
    rule: "invalid role",
    yaml: `${T}  - id: a\n    role: wizard\n    description: x\n`,
    errors: [
      "4:11: tasks[0].role: invalid role 'wizard'. Allowed: spec_writer, test_writer, test_reviewer, implementer, generic",
    ],
  },
  {
    rule: "description must be a string or null",
    yaml: `${T}  - id: a\n    description: [x]\n`,
    errors: ["4:18: tasks[0].description: must be a string or null"],
  },
  {
    rule: "generic task needs a description",
    yaml: `${T}  - id: a\n`,
    errors: [
      "3:5: tasks[0]: task 'a' has role 'generic' and no description; the description is its whole assignment",
    ],
  },
  {
    rule: "dependencies must be a list",
    yaml: `${T}  - id: a\n    description: x\n    dependencies: null\n`,
    errors: ["5:19: tasks[0].dependencies: must be a list of task IDs"],
  },
  {
    rule: "unknown dependency",
    yaml: `${T}  - id: a\n    description: x\n    dependencies: [b]\n`,
    errors: ["5:20: tasks[0].dependencies[0]: unknown dependency id 'b'"],
  },
  {
    rule: "duplicate dependency",
    yaml: `${T}  - id: a\n    description: x\n  - id: b\n    description: y\n    dependencies: [a, a]\n`,
    errors: ["7:23: tasks[1].dependencies[1]: duplicate dependency id 'a'"],
  },
  {
    rule: "many unknown keys are listed up to 20",
    yaml: `name: g\n${LONG.map((k) => `${k}: 1\n`).join("")}zz: 1\ntasks:\n  - {id: a, description: x}\n`,
    errors: [
      "2:1: contains unknown key(s): d0, d1, d10, d11, d12, d13, d14, d15, d16, d17, d18, d19, d2, d3, d4, d5, d6, d7, d8, d9 and 1 more",
    ],
  },
  {
    rule: "duplicate dependency in a long list",
    yaml: `${T}${LONG.map((d) => `  - {id: ${d}, description: x}\n`).join("")}  - id: a\n    description: x\n    dependencies: [${[...LONG, "d5", "d19"].join(", ")}]\n`,
    errors: [
      "25:110: tasks[20].dependencies[20]: duplicate dependency id 'd5'",
      "25:114: tasks[20].dependencies[21]: duplicate dependency id 'd19'",
    ],
  },
  {
    rule: "dependency cycle with its path",
    yaml: `${T}  - id: a\n    description: x\n    dependencies: [c]\n  - id: b\n    description: y\n    dependencies: [a]\n  - id: c\n    description: z\n    dependencies: [b]\n`,
    errors: ["5:19: tasks[0].dependencies: contains a dependency cycle: a -> c -> b -> a"],
  },
  {
    rule: "self dependency",
    yaml: `${T}  - id: a\n    description: x\n    dependencies: [a]\n`,
    errors: ["5:19: tasks[0].dependencies: contains a dependency cycle: a -> a"],
  },
  {
    rule: "paths and tagged_paths are exclusive",
    yaml: `${T}  - id: a\n    description: x\n    paths: {src: [a.py]}\n    tagged_paths: []\n`,
    errors: ["6:5: tasks[0].tagged_paths: 'paths' and 'tagged_paths' are mutually exclusive"],
  },
  {
    rule: "tagged_paths must be a list of mappings",
    yaml: `${T}  - id: a\n    description: x\n    tagged_paths: a.py\n`,
    errors: ["5:19: tasks[0].tagged_paths: must be a list of {path, category} mappings"],
  },
  {
    rule: "paths must stay inside the repository",
    yaml: `${T}  - id: a\n    description: x\n    paths: {src: [../../etc/passwd]}\n`,
    errors: ["3:5: tasks[0]: path '../../etc/passwd' may not contain '..'"],
  },
  {
    rule: "max_gate_attempts must be positive",
    yaml: `${T}  - id: a\n    description: x\n    max_gate_attempts: 0\n`,
    errors: ["5:24: tasks[0].max_gate_attempts: must be greater than 0"],
  },
  {
    rule: "max_gate_attempts must be an integer",
    yaml: `${T}  - id: a\n    description: x\n    max_gate_attempts: 2.5\n`,
    errors: ["5:24: tasks[0].max_gate_attempts: must be an integer"],
  },
  {
    rule: "review needs its agent key",
    yaml: `${T}  - id: a\n    description: x\n    review: {review_on_attempt: 2}\n`,
    errors: ["5:13: tasks[0].review.agent: is required"],
  },
  {
    rule: "review_on_attempt null is an error, not a crash",
    yaml: `${T}  - id: a\n    description: x\n    review:\n      agent: null\n      review_on_attempt: null\n`,
    errors: ["7:26: tasks[0].review.review_on_attempt: must be an integer"],
  },
  {
    rule: "isolation enums",
    yaml: `${T}  - id: a\n    description: x\n    review:\n      agent:\n        isolation: {runtime: lxc}\n`,
    errors: ["7:30: tasks[0].review.agent.isolation.runtime: invalid runtime 'lxc'. Allowed: docker, podman"],
  },
  {
    rule: "adr_verbosity enum",
    yaml: `${T}  - id: a\n    description: x\n    primary_agent: {adr_verbosity: chatty}\n`,
    errors: [
      "5:36: tasks[0].primary_agent.adr_verbosity: invalid adr_verbosity 'chatty'. Allowed: none, standard, detailed, educational",
    ],
  },
  {
    rule: "inputs_from form",
    yaml: `${T}  - id: a\n    description: x\n    inputs_from: a\n`,
    errors: ["5:18: tasks[0].inputs_from: must be a mapping or list of mappings"],
  },
  {
    rule: "inputs_from: the problem inside the mapping, not the union's",
    yaml: `${T}  - id: a\n    description: x\n  - id: b\n    description: y\n    dependencies: [a]\n    inputs_from: {category: stubs}\n`,
    errors: ["8:18: tasks[1].inputs_from.task: is required"],
  },
  {
    rule: "inputs_from: the problem inside a list item",
    yaml: `${T}  - id: a\n    description: x\n  - id: b\n    description: y\n    dependencies: [a]\n    inputs_from: [{task: a, categry: s}]\n`,
    errors: ["8:29: tasks[1].inputs_from[0]: contains unknown key(s): categry (did you mean `category`?)"],
  },
  {
    rule: "inputs_from unknown task",
    yaml: `${T}  - id: a\n    description: x\n    inputs_from: [{task: zz}]\n`,
    errors: ["5:26: tasks[0].inputs_from[0].task: unknown task id 'zz'"],
  },
  {
    rule: "inputs_from must be a transitive dependency",
    yaml: `${T}  - id: a\n    description: x\n  - id: b\n    description: y\n    inputs_from: {task: a}\n`,
    errors: [
      "7:25: tasks[1].inputs_from.task: task 'a' is not a dependency (direct or transitive) of task 'b'",
    ],
  },
  {
    rule: "inputs_from through a chain, and from a task that is no dependency",
    yaml: `${T}  - {id: a, description: x}\n  - {id: b, description: x, dependencies: [a]}\n  - {id: c, description: x, dependencies: [b], inputs_from: {task: a}}\n  - {id: d, description: x, dependencies: [a], inputs_from: [{task: a}, {task: c}]}\n  - {id: e, description: x, dependencies: [c, d], inputs_from: [{task: b}, {task: a}]}\n`,
    errors: [
      "6:80: tasks[3].inputs_from[1].task: task 'c' is not a dependency (direct or transitive) of task 'd'",
    ],
  },
  {
    rule: "inputs_from problems in file order",
    yaml: `${T}  - {id: a, description: x}\n  - {id: b, description: x, inputs_from: {task: a}}\n  - {id: c, description: x, inputs_from: {task: zz}}\n`,
    errors: [
      "4:49: tasks[1].inputs_from.task: task 'a' is not a dependency (direct or transitive) of task 'b'",
      "5:49: tasks[2].inputs_from.task: unknown task id 'zz'",
    ],
  },
  {
    rule: "workstreams must be a list",
    yaml: `name: g\nworkstreams: {id: w}\ntasks:\n  - id: a\n    description: x\n`,
    errors: ["2:14: workstreams: must be a list"],
  },
  {
    rule: "duplicate workstream id",
    yaml: `name: g\nworkstreams:\n  - id: w\n  - id: w\ntasks:\n  - id: a\n    description: x\n    workstream_id: w\n`,
    errors: ["4:9: workstreams[1].id: duplicate workstream id 'w'"],
  },
  {
    rule: "auto_merge must be a boolean",
    yaml: `name: g\nworkstreams:\n  - id: w\n    auto_merge: maybe\ntasks:\n  - id: a\n    description: x\n    workstream_id: w\n`,
    errors: ["4:17: workstreams[0].auto_merge: must be a boolean"],
  },
  {
    rule: "base_branch null is not a string",
    yaml: `name: g\nworkstreams:\n  - id: w\n    base_branch: null\ntasks:\n  - id: a\n    description: x\n    workstream_id: w\n`,
    errors: ["4:18: workstreams[0].base_branch: must be a string"],
  },
  {
    rule: "explicit workstreams have no implicit default",
    yaml: `name: g\nworkstreams:\n  - id: w\ntasks:\n  - id: a\n    description: x\n  - id: b\n    description: y\n    workstream_id: w\n`,
    errors: [
      "5:5: tasks[0].workstream_id: unknown workstream id 'default'; with explicit workstreams there is no implicit 'default': declare it or set workstream_id",
    ],
  },
  {
    rule: "unknown workstream",
    yaml: `${T}  - id: a\n    description: x\n    workstream_id: nope\n`,
    errors: ["5:20: tasks[0].workstream_id: unknown workstream id 'nope'"],
  },
  {
    rule: "workstream without tasks",
    yaml: `name: g\nworkstreams:\n  - id: w\n  - id: empty\ntasks:\n  - id: a\n    description: x\n    workstream_id: w\n`,
    errors: ["4:5: workstreams[1]: workstream 'empty' has no tasks; give it a task or remove it"],
  },
  {
    rule: "unknown parent workstream",
    yaml: `name: g\nworkstreams:\n  - id: w\n    parent_workstream_id: p\ntasks:\n  - id: a\n    description: x\n    workstream_id: w\n`,
    errors: ["4:27: workstreams[0].parent_workstream_id: unknown parent_workstream_id 'p'"],
  },
  {
    rule: "workstream hierarchy cycle",
    yaml: `name: g\nmax_workstream_depth: 5\nworkstreams:\n  - id: u\n    parent_workstream_id: v\n  - id: v\n    parent_workstream_id: u\ntasks:\n  - id: a\n    description: x\n    workstream_id: u\n  - id: b\n    description: y\n    workstream_id: v\n`,
    errors: ["5:27: workstreams[0].parent_workstream_id: workstream hierarchy contains a cycle: u -> v -> u"],
  },
  {
    rule: "workstream below a hierarchy cycle",
    yaml: `name: g\nmax_workstream_depth: 5\nworkstreams:\n  - {id: x, parent_workstream_id: u}\n  - {id: u, parent_workstream_id: v}\n  - {id: v, parent_workstream_id: u}\ntasks:\n  - {id: a, description: x, workstream_id: x}\n  - {id: b, description: x, workstream_id: u}\n  - {id: c, description: x, workstream_id: v}\n`,
    errors: ["5:35: workstreams[1].parent_workstream_id: workstream hierarchy contains a cycle: u -> v -> u"],
  },
  {
    rule: "workstreams that wait for each other",
    yaml: `name: g\nworkstreams:\n  - {id: w1}\n  - {id: w2}\ntasks:\n  - {id: a, description: x, workstream_id: w1}\n  - {id: b, description: x, workstream_id: w2, dependencies: [a]}\n  - {id: c, description: x, workstream_id: w2}\n  - {id: d, description: x, workstream_id: w1, dependencies: [c]}\n`,
    errors: [
      "9:63: tasks[3].dependencies[0]: workstreams wait for each other in a cycle: w1 -> w2 -> w1; a task that depends on another workstream waits for that whole workstream to merge, so this graph could never finish",
    ],
  },
  {
    rule: "workstream depth",
    yaml: `name: g\nworkstreams:\n  - id: a1\n  - id: b1\n    parent_workstream_id: a1\n  - id: c1\n    parent_workstream_id: b1\ntasks:\n  - id: x\n    description: x\n    workstream_id: a1\n  - id: y\n    description: y\n    workstream_id: b1\n  - id: z\n    description: z\n    workstream_id: c1\n`,
    errors: [
      "7:27: workstreams[2].parent_workstream_id: workstream 'c1' exceeds maximum supported depth of 1 (set max_workstream_depth)",
    ],
  },
  {
    rule: "task id collides with a workstream ref",
    yaml: `name: g\nworkstreams:\n  - id: x\ntasks:\n  - id: x\n    description: x\n    workstream_id: x\n`,
    errors: [
      "5:9: tasks[0].id: task id 'x' collides with workstream 'x': branch agentrelay/g/x cannot coexist with agentrelay/g/x/integration",
    ],
  },
  {
    rule: "max_concurrency must be an integer >= 1",
    yaml: `${T}  - id: a\n    description: x\nmax_concurrency: 0\n`,
    errors: ["5:18: max_concurrency: must be greater than 0"],
  },
  {
    rule: "budgets are positive amounts of dollars, at every level",
    yaml: `name: g\nmax_cost_usd: -1\nmax_attempt_cost_usd: "5"\nworkstreams:\n  - id: w\n    max_cost_usd: 0\ntasks:\n  - id: a\n    description: x\n    workstream_id: w\n    max_cost_usd: 0.5\n    max_attempt_cost_usd: true\n`,
    errors: [
      "2:15: max_cost_usd: must be greater than 0",
      "3:23: max_attempt_cost_usd: must be a number of US dollars",
      "6:19: workstreams[0].max_cost_usd: must be greater than 0",
      "12:27: tasks[0].max_attempt_cost_usd: must be a number of US dollars",
    ],
  },
  {
    rule: "budgets are whole micro-dollars: at most six decimals",
    yaml: `name: g\nmax_cost_usd: 2.0000001\ntasks:\n  - id: a\n    description: x\n    max_cost_usd: 0.3000004\n`,
    errors: [
      "2:15: max_cost_usd: must be a plain decimal number of US dollars with at most six decimals",
      "6:19: tasks[0].max_cost_usd: must be a plain decimal number of US dollars with at most six decimals",
    ],
  },
  {
    rule: "a per-attempt limit below the floor of an attempt it limits is refused, where it is set",
    yaml: `name: g\nmax_attempt_cost_usd: 0.2\ntasks:\n  - id: a\n    description: x\n  - id: b\n    description: x\n    max_attempt_cost_usd: 0.05\n    primary_agent: { model: claude-haiku-4-5 }\n  - id: c\n    description: x\n    max_attempt_cost_usd: 1\n    primary_agent: { model: claude-opus-4-1 }\n`,
    errors: [
      "2:23: max_attempt_cost_usd: $0.20 is less than the floor of an attempt of task 'a', $0.30 (four turns of Claude Code's default model, Sonnet): no attempt of it could start; raise it to at least $0.30, or lower the floor with min_attempt_cost_usd",
      "8:27: tasks[1].max_attempt_cost_usd: $0.05 is less than the floor of an attempt of task 'b', $0.10 (four turns of claude-haiku-4-5): no attempt of it could start; raise it to at least $0.10, or lower the floor with min_attempt_cost_usd",
      "12:27: tasks[2].max_attempt_cost_usd: $1.00 is less than the floor of an attempt of task 'c', $1.50 (four turns of claude-opus-4-1): no attempt of it could start; raise it to at least $1.50, or lower the floor with min_attempt_cost_usd",
    ],
  },
  {
    rule: "a budget below the floor of an attempt it pays for is refused: the run, a workstream, a task",
    yaml: `name: g\nmax_cost_usd: 0.01\nworkstreams:\n  - id: w\n    max_cost_usd: 0.2\ntasks:\n  - id: base_calc\n    description: x\n    workstream_id: w\n    max_cost_usd: 0.25\n`,
    errors: [
      "2:15: max_cost_usd: $0.01 is less than the floor of an attempt of task 'base_calc', $0.30 (four turns of Claude Code's default model, Sonnet): the run could never start it; raise it to at least $0.30, or lower the floor with min_attempt_cost_usd",
      "5:19: workstreams[0].max_cost_usd: $0.20 is less than the floor of an attempt of task 'base_calc', $0.30 (four turns of Claude Code's default model, Sonnet): workstream 'w' could never start it; raise it to at least $0.30, or lower the floor with min_attempt_cost_usd",
      "10:19: tasks[0].max_cost_usd: $0.25 is less than the floor of an attempt of task 'base_calc', $0.30 (four turns of Claude Code's default model, Sonnet): its budget could never start one; raise it to at least $0.30, or lower the floor with min_attempt_cost_usd",
    ],
  },
  {
    rule: "a lowered floor lets small budgets and limits through",
    yaml: `name: g\nmax_cost_usd: 0.01\nmin_attempt_cost_usd: 0.005\ntasks:\n  - id: a\n    description: x\n    max_attempt_cost_usd: 0.005\n`,
    errors: [],
  },
  {
    rule: "resolution keys: a count of attempts at every level, and an integration gate command",
    yaml: `name: g\nmax_resolution_attempts: -1\nworkstreams:\n  - id: w\n    max_resolution_attempts: 101\n    integration_gate: [make]\ntasks:\n  - id: a\n    description: x\n    workstream_id: w\n    max_resolution_attempts: 1.5\n`,
    errors: [
      "2:26: max_resolution_attempts: must be 0 or more",
      "5:30: workstreams[0].max_resolution_attempts: must be at most 100",
      "6:23: workstreams[0].integration_gate: must be a string",
      "11:30: tasks[0].max_resolution_attempts: must be an integer",
    ],
  },
  {
    rule: "booleans are not integers",
    yaml: `${T}  - id: a\n    description: x\nmax_task_attempts: true\n`,
    errors: ["5:20: max_task_attempts: must be an integer"],
  },
  {
    rule: "teardown_mode enum",
    yaml: `${T}  - id: a\n    description: x\nteardown_mode: sometimes\n`,
    errors: ["5:16: teardown_mode: invalid teardown_mode 'sometimes'. Allowed: always, never, on_success"],
  },
  {
    rule: "fail_fast flags are booleans",
    yaml: `${T}  - id: a\n    description: x\nfail_fast_on_internal_error: 1\n`,
    errors: ["5:30: fail_fast_on_internal_error: must be a boolean"],
  },
  {
    rule: "tools must be a list",
    yaml: `${T}  - id: a\n    description: x\ntools: pixi\n`,
    errors: ["5:8: tools: must be a list of strings"],
  },
  {
    rule: "duplicate keys",
    yaml: `${T}  - id: a\n    id: b\n    description: x\n`,
    errors: ["4:5: duplicate key 'id'"],
  },
  {
    rule: "alias expansion is bounded",
    yaml: billionLaughs(),
    errors: [
      "1:1: YAML aliases expand to more than 1000000 nodes; refusing a possible resource-exhaustion file",
    ],
  },
  {
    rule: "one document only",
    yaml: `${T}  - id: a\n    description: x\n---\nname: h\n`,
    errors: ["1:1: the file holds more than one YAML document"],
  },
  {
    rule: "only standard tags",
    yaml: `${T}  - id: a\n    description: !!binary aGVsbG8=\n`,
    errors: ["4:18: unsupported YAML tag '!!binary'"],
  },
  {
    rule: "YAML syntax errors are located",
    yaml: `${T}  - id: a\n   description: x\n`,
    errors: ["4:4: invalid YAML: bad indentation of a sequence entry"],
  },
  {
    rule: "cyberian: unknown keys are rejected, not dropped",
    yaml: "name: w\nsubtasks:\n  s:\n    instructions: hi\n    loop_until: {status: DONE, message: m, max_iteration: 3}\n",
    errors: [
      "5:44: subtasks.s.loop_until: contains unknown key(s): max_iteration (did you mean `max_iterations`?)",
    ],
  },
  {
    rule: "cyberian: loop message is required",
    yaml: "name: w\nsubtasks:\n  s:\n    instructions: hi\n    loop_until: {status: DONE}\n",
    errors: ["5:17: subtasks.s.loop_until.message: is required"],
  },
  {
    rule: "cyberian: exactly one of python or script",
    yaml: "name: w\nsubtasks:\n  s:\n    instructions: hi\n    success_criteria: {max_retries: 2}\n",
    errors: ["5:23: subtasks.s.success_criteria: needs exactly one of 'python' or 'script'"],
  },
  {
    rule: "cyberian: template syntax",
    yaml: "name: w\nsubtasks:\n  s:\n    instructions: 'hello {{ name'\n",
    errors: [
      "4:19: subtasks.s.instructions: template error: syntax error: unexpected end of input, expected end of variable block",
    ],
  },
  {
    rule: "cyberian: params need a range",
    yaml: "name: w\nparams:\n  q: {required: true}\nsubtasks:\n  s:\n    instructions: hi\n",
    errors: ["3:6: params.q.range: is required"],
  },
  {
    rule: "cyberian: agent_lifecycle values",
    yaml: "name: w\nagent_lifecycle: forever\nsubtasks:\n  s:\n    instructions: hi\n",
    errors: ["2:18: agent_lifecycle: invalid agent_lifecycle 'forever'. Allowed: reuse, refresh"],
  },
  {
    rule: "cyberian: instructions or provider_call, not both",
    yaml: "name: w\nsubtasks:\n  s:\n    instructions: hi\n    provider_call: {provider: p, method: m}\n",
    errors: [
      "5:5: subtasks.s.provider_call: a task has either 'instructions' or a 'provider_call', not both",
    ],
  },
  {
    rule: "one pass: a mistyped key does not hide an unknown dependency",
    yaml: `${T}  - id: a\n    description: x\n    dependancies: [b]\n  - id: c\n    description: y\n    dependencies: [zz]\n`,
    errors: [
      "5:5: tasks[0]: contains unknown key(s): dependancies (did you mean `dependencies`?)",
      "8:20: tasks[1].dependencies[0]: unknown dependency id 'zz'",
    ],
  },
  {
    rule: "one pass: an id colliding with a workstream does not hide a cycle",
    yaml: "name: g\nworkstreams:\n  - id: w\ntasks:\n  - id: w\n    workstream_id: w\n    description: x\n    dependencies: [b]\n  - id: b\n    workstream_id: w\n    description: y\n    dependencies: [w]\n",
    errors: [
      "5:9: tasks[0].id: task id 'w' collides with workstream 'w': branch agentrelay/g/w cannot coexist with agentrelay/g/w/integration",
      "12:19: tasks[1].dependencies: contains a dependency cycle: b -> w -> b",
    ],
  },
  {
    rule: "one pass: an empty workstream does not hide a cycle, nor an unknown dependency",
    yaml: "name: g\nworkstreams:\n  - id: x\n  - id: empty\ntasks:\n  - id: a\n    workstream_id: x\n    description: x\n    dependencies: [b, nope]\n  - id: b\n    workstream_id: x\n    description: y\n    dependencies: [a]\n",
    errors: [
      "4:5: workstreams[1]: workstream 'empty' has no tasks; give it a task or remove it",
      "9:19: tasks[0].dependencies: contains a dependency cycle: a -> b -> a",
      "9:23: tasks[0].dependencies[1]: unknown dependency id 'nope'",
    ],
  },
  {
    rule: "cyberian: a criteria script stays in the repository",
    yaml: "name: w\nsubtasks:\n  s:\n    instructions: hi\n    success_criteria: {script: ../../../etc/check.py}\n  t:\n    instructions: hi\n    success_criteria: {script: /usr/bin/check}\n",
    errors: [
      "5:32: subtasks.s.success_criteria.script: path '../../../etc/check.py' may not contain '..'",
      "8:32: subtasks.t.success_criteria.script: path '/usr/bin/check' must be relative to the repository",
    ],
  },
  {
    rule: "cyberian: a provider's output file stays in the repository (templated parts checked when rendered)",
    yaml: "name: w\nsubtasks:\n  s:\n    provider_call: {provider: p, method: m, output_file: '/tmp/{{ x }}.json'}\n  t:\n    provider_call: {provider: p, method: m, output_file: 'out/{{ x }}.json'}\n",
    errors: [
      "4:58: subtasks.s.provider_call.output_file: path '/tmp/{{ x }}.json' must be relative to the repository",
    ],
  },
  {
    rule: "cyberian: something must run",
    yaml: "name: w\ndescription: nothing\nsubtasks:\n  s:\n    description: empty\n",
    errors: [
      "1:1: the workflow has no task with 'instructions' or a 'provider_call', so there is nothing to run",
    ],
  },
];

function billionLaughs(): string {
  const letters = "abcdefghij";
  let text = "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n";
  for (let i = 1; i < letters.length; i++) {
    const prev = letters[i - 1]!;
    text += `${letters[i]}: &${letters[i]} [${Array(10).fill(`*${prev}`).join(", ")}]\n`;
  }
  return text;
}
