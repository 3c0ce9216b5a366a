import { describe, expect, it } from "vitest";
import { fit, LIMITS, withinLimits } from "../../src/github/limits.ts";
import { FakeGitHub } from "../../harness/fake-github.ts";

describe("GitHub's limits", () => {
  it("cuts at a line or a word, never past the limit, and says so", () => {
    const text = `${"line of words\n".repeat(10)}tail`;
    const cut = fit(text, 60);
    expect(cut.length).toBeLessThanOrEqual(60);
    expect(cut).toMatch(
      /^line of words\n(line of words\n)*line of words … \(cut to fit GitHub's limit\)$|words … \(cut/,
    );
    expect(fit("short", 60)).toBe("short");
    const wide = "é".repeat(40_000); // two bytes each
    expect(Buffer.byteLength(fit(wide, LIMITS.annotation, "bytes"))).toBeLessThanOrEqual(LIMITS.annotation);
  });

  it("brings a request's texts within the limits: bodies, titles, check outputs, annotations", () => {
    const long = "w ".repeat(80_000);
    const params: Record<string, unknown> = {
      body: long,
      title: long,
      output: {
        title: long,
        summary: long,
        annotations: Array.from({ length: 60 }, () => ({ title: long, message: long, path: "a" })),
      },
    };
    withinLimits(params);
    const output = params.output as {
      title: string;
      summary: string;
      annotations: { title: string; message: string }[];
    };
    expect((params.body as string).length).toBeLessThanOrEqual(LIMITS.body);
    expect((params.title as string).length).toBeLessThanOrEqual(LIMITS.title);
    expect(output.title.length).toBeLessThanOrEqual(LIMITS.checkTitle);
    expect(output.summary.length).toBeLessThanOrEqual(LIMITS.body);
    expect(output.annotations).toHaveLength(LIMITS.annotations);
    expect(Buffer.byteLength(output.annotations[0]!.message)).toBeLessThanOrEqual(LIMITS.annotation);
    expect(output.annotations[0]!.title.length).toBeLessThanOrEqual(LIMITS.checkTitle);
  });
});

describe("the fake GitHub's limits on what a request carries (on in every test)", () => {
  const gh = () => new FakeGitHub();
  const repo = "/repos/octo/demo";
  it.each([
    [
      "POST",
      `${repo}/issues`,
      { title: "t", body: "x".repeat(65_537) },
      "body is too long (maximum is 65536 characters)",
    ],
    [
      "POST",
      `${repo}/issues`,
      { title: "t".repeat(257), body: "" },
      "title is too long (maximum is 256 characters)",
    ],
    [
      "PATCH",
      `${repo}/issues/comments/5`,
      { body: "x".repeat(65_537) },
      "body is too long (maximum is 65536 characters)",
    ],
    [
      "POST",
      `${repo}/check-runs`,
      { name: "n", head_sha: "a".repeat(40), output: { title: "t", summary: "x".repeat(65_536) } },
      "data/output/summary must NOT have more than 65535 characters",
    ],
    [
      "POST",
      `${repo}/check-runs`,
      {
        name: "n",
        head_sha: "a".repeat(40),
        output: {
          title: "t",
          summary: "s",
          annotations: Array.from({ length: 51 }, () => ({
            path: "a",
            start_line: 1,
            end_line: 1,
            annotation_level: "failure",
            message: "m",
          })),
        },
      },
      "data/output/annotations must NOT have more than 50 items",
    ],
    [
      "POST",
      `${repo}/actions/workflows/w.yml/dispatches`,
      { ref: "main", inputs: Object.fromEntries(Array.from({ length: 26 }, (_, i) => [`i${i}`, "v"])) },
      "data/inputs must NOT have more than 25 properties",
    ],
    [
      "POST",
      `${repo}/actions/workflows/w.yml/dispatches`,
      { ref: "main", inputs: { big: "x".repeat(65_536) } },
      "inputs are too large (maximum is 65535 characters)",
    ],
  ])("%s %s past its limit is answered 422", (method, path, body, message) => {
    const [status, answer] = gh().handle(method, path, body);
    expect(status).toBe(422);
    expect(JSON.stringify(answer)).toContain(message);
  });

  it("and the app's own cutting keeps what it sends within them", () => {
    const params = { output: { title: "t", summary: "x".repeat(70_000), text: "y".repeat(70_000) } };
    withinLimits(params);
    expect(params.output.summary.length).toBeLessThanOrEqual(65_535);
    expect(params.output.text.length).toBeLessThanOrEqual(65_535);
  });
});

describe("GraphQL documents sent to the fake GitHub", () => {
  it("are checked against GitHub's published schema, as REST requests are against its OpenAPI description", () => {
    const [status, answer] = new FakeGitHub().handle("POST", "/graphql", {
      query:
        'query { repository(owner: "octo", name: "demo") { ref(qualifiedName: "main") { target { oid isTruncated } } } }',
      variables: {},
    });
    expect(status).toBe(422);
    expect(JSON.stringify(answer)).toContain('Cannot query field \\"isTruncated\\" on type \\"GitObject\\"');
  });
});
