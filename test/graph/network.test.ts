import { describe, expect, it } from "vitest";
import { parseGraph } from "../../src/graph/load.ts";
import { allowsHost, hostPatternProblem } from "../../src/graph/network.ts";

describe("the egress allowlist's patterns", () => {
  it.each([
    [["registry.npmjs.org"], "registry.npmjs.org", 443, true],
    [["registry.npmjs.org"], "REGISTRY.npmjs.org.", 443, true],
    [["registry.npmjs.org"], "evil.registry.npmjs.org", 443, false],
    [["registry.npmjs.org"], "registry.npmjs.org.evil.example", 443, false],
    [["*.pythonhosted.org"], "files.pythonhosted.org", 443, true],
    [["*.pythonhosted.org"], "pythonhosted.org", 443, false],
    [["*.pythonhosted.org"], "evilpythonhosted.org", 443, false],
    [["127.0.0.1:4873"], "127.0.0.1", 4873, true],
    [["127.0.0.1:4873"], "127.0.0.1", 4874, false],
    [["[::1]:8080"], "[::1]", 8080, true],
    [["[::1]:8080"], "::1", 8080, true],
    [["*"], "anything.example", 1, true],
    [[], "registry.npmjs.org", 443, false],
  ] as const)("%j allows %s:%i: %s", (allow, host, port, allowed) => {
    expect(allowsHost(allow, host, port)).toBe(allowed);
  });

  it.each([
    ["*", null],
    ["pypi.org:443", null],
    ["exa*mple.com", "'exa*mple.com': a wildcard may only open the pattern, as in *.example.com"],
    ["example.com:0", "'example.com:0' has an invalid port (1-65535)"],
    [
      "https://example.com",
      "'https://example.com' is not a host name, an address or *.domain (with an optional :port)",
    ],
  ])("%s: %s", (pattern, problem) => {
    expect(hostPatternProblem(pattern)).toBe(problem);
  });
});

describe("network in a graph", () => {
  const graph = parseGraph(
    "g.yaml",
    `name: g
network: { allow: [registry.npmjs.org] }
output_review: { model: claude-haiku-4-5 }
workstreams:
  - id: web
    network: { allow: ["*.pythonhosted.org", pypi.org] }
  - id: docs
tasks:
  - { id: a, description: x, workstream_id: web }
  - { id: b, description: x, workstream_id: web, network: { allow: ["*"] } }
  - { id: c, description: x, workstream_id: docs }
  - { id: d, description: x, workstream_id: docs, network: {} }
`,
  );
  const allow = (id: string) => graph.tasks.find((t) => t.id === id)!.network.allow;

  it("is inherited graph -> workstream -> task, the nearest allow winning", () => {
    expect(allow("a")).toEqual(["*.pythonhosted.org", "pypi.org"]);
    expect(allow("b")).toEqual(["*"]);
    expect(allow("c")).toEqual(["registry.npmjs.org"]);
    expect(allow("d")).toEqual(["registry.npmjs.org"]);
    expect(graph.settings.outputReview).toEqual({ model: "claude-haiku-4-5" });
  });

  it("is empty, and the output review off, when the graph says nothing", () => {
    const plain = parseGraph("g.yaml", "name: g\ntasks: [{ id: a, description: x }]\n");
    expect(plain.tasks[0]!.network.allow).toEqual([]);
    expect(plain.settings.outputReview).toBeNull();
  });

  it("refuses a pattern that is not a host, with its line", () => {
    expect(() =>
      parseGraph(
        "g.yaml",
        "name: g\ntasks:\n  - id: a\n    description: x\n    network: { allow: [registry.npmjs.org, 'http://x'] }\n",
      ),
    ).toThrow(/g\.yaml:5:\d+: tasks\[0\]\.network\.allow\[1\]: 'http:\/\/x' is not a host name/);
  });
});
