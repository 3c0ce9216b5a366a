import { describe, expect, it } from "vitest";
import { redactor, secretValues } from "../../src/attempt/redact.ts";

const classic = `ghs_${"a1B2c3D4e5".repeat(3)}xYz123`;
const stateless = `ghs_123456_eyJhbGciOiJSUzI1NiJ9.${"eyJpc3MiOiJnaXRodWIifQ".repeat(8)}.${"sig-_".repeat(40)}`;

describe("redaction", () => {
  it("masks both GitHub token formats, Anthropic keys and JWTs", () => {
    const redact = redactor([]);
    expect(redact(`token=${classic} next`)).toBe("token=*** next");
    expect(stateless.length).toBeGreaterThan(300);
    expect(redact(`Authorization: Bearer ${stateless}`)).toBe("Authorization: Bearer ***");
    expect(redact("key sk-ant-api03-abcdefghijklmnop here")).toBe("key *** here");
    expect(redact("ordinary text with ghs_short and base64 aGVsbG8=")).toBe(
      "ordinary text with ghs_short and base64 aGVsbG8=",
    );
  });

  it("masks the exact secret values the job holds, whatever their shape", () => {
    const redact = redactor(
      secretValues({
        MY_SERVICE_PASSWORD: "hunter2-correct-horse",
        PATH: "/usr/bin",
        ANTHROPIC_BASE_URL: "http://127.0.0.1:1",
      }),
    );
    expect(redact("login with hunter2-correct-horse at http://127.0.0.1:1 from /usr/bin")).toBe(
      "login with *** at http://127.0.0.1:1 from /usr/bin",
    );
  });
});
