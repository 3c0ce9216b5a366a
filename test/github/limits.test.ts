import { describe, expect, it } from "vitest";
import { fit, LIMITS, withinLimits } from "../../src/github/limits.ts";

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
