import { describe, expect, it } from "vitest";
import { renderTemplate, TEMPLATE_LIMITS, templateSyntaxError } from "../../src/template/jinja.ts";

describe("templates from untrusted files", () => {
  it("are bounded in memory: a huge string fails at once, and the engine still works after", () => {
    const before = process.resourceUsage().maxRSS;
    expect(templateSyntaxError("{{ 'x' * 1000000000 }}")).toBe(
      `the template needs more than ${TEMPLATE_LIMITS.memoryMb} MB of memory (the limit)`,
    );
    expect(() => renderTemplate("{{ ('x' * 10) * 100000000 }}", {})).toThrow(/MB of memory \(the limit\)/);
    // The peak stays near the cap (it was 2 GB), and a trap leaves nothing broken behind it.
    expect((process.resourceUsage().maxRSS - before) / 1024).toBeLessThan(2 * TEMPLATE_LIMITS.memoryMb);
    expect(renderTemplate("{{ n + 1 }}", { n: 1 })).toBe("2");
    expect(templateSyntaxError("{{ n }}")).toBeNull();
  });

  it("are bounded in work and in output", () => {
    expect(() =>
      renderTemplate("{% for i in range(100000) %}{% for j in range(1000) %}{% endfor %}{% endfor %}", {}),
    ).toThrow(`the template takes more than ${TEMPLATE_LIMITS.fuel} steps to render (the limit)`);
    expect(() => renderTemplate("{{ 'x' * 2000000 }}", {})).toThrow(
      `the template renders more than ${TEMPLATE_LIMITS.outputChars} characters (the limit)`,
    );
  });

  it("name the template line of an error past the first", () => {
    expect(() => renderTemplate("fine\n{{ missing }}", {})).toThrow("undefined value (template line 2)");
  });
});
