/**
 * The output checks read what a commit holds, not what a diff shows: a file git would call binary
 * (by an attribute or a NUL byte) is scanned all the same, as are file names and secrets encoded in
 * base64 or hex; a file too large to read is refused with one line that says so.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { describe, expect, it } from "vitest";
import { git } from "../../src/attempt/git.ts";
import { checkOutput } from "../../src/attempt/output-checks.ts";
import { tempRepo } from "../support/git.ts";
import { githubToken } from "../support/secrets.ts";

const token = githubToken();
const escaped = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** One finding: the token's, where it is, masked (secretlint names the kind, never the token). */
function expectOneSecret(blocking: string[], where: string): void {
  expect(blocking).toHaveLength(1);
  expect(blocking[0]).toMatch(new RegExp(`^a secret in ${escaped(where)}: found GitHub Token`));
  expect(blocking[0]).not.toContain(token);
}

/** Writes `files` (text or bytes) over `repo`'s work tree and commits them; returns the commit. */
async function commit(repo: string, files: Record<string, string | Buffer>): Promise<string> {
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(dirname(join(repo, path)), { recursive: true });
    writeFileSync(join(repo, path), content);
  }
  await git(repo, ["add", "--all"]);
  await git(repo, ["commit", "-q", "-m", "work"]);
  return git(repo, ["rev-parse", "HEAD"]);
}

/** A repository, its first commit, and a commit on it that writes `files`. */
async function attempt(files: Record<string, string | Buffer>, before: Record<string, string | Buffer> = {}) {
  const repo = await tempRepo();
  const base =
    Object.keys(before).length > 0 ? await commit(repo, before) : await git(repo, ["rev-parse", "HEAD"]);
  return { repo, base, head: await commit(repo, files) };
}

/** Bytes of a PNG-like binary file with `text` somewhere inside it. */
const binaryWith = (text: string) =>
  Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]),
    Buffer.from(text),
    Buffer.alloc(64),
  ]);

describe("secrets in files git would not diff as text", () => {
  const nul = Buffer.from(`intro\nTOKEN=${token}\n\0 tail\n`);
  const png = binaryWith(`export GH_TOKEN=${token}`);
  const utf16 = Buffer.from(`\ufeffTOKEN=${token}\r\n`, "utf16le");
  it.each([
    [
      "a .gitattributes line `-diff`",
      { ".gitattributes": "notes.txt -diff\n", "notes.txt": `intro\nTOKEN=${token}\n` },
      "notes.txt:2",
    ],
    [
      "a .gitattributes line `binary`",
      { ".gitattributes": "*.cfg binary\n", "app.cfg": `TOKEN=${token}\n` },
      "app.cfg:1",
    ],
    ["one NUL byte", { "notes.txt": nul }, `notes.txt (binary, at byte ${nul.indexOf(token)})`],
    ["a binary file", { "logo.png": png }, `logo.png (binary, at byte ${png.indexOf(token)})`],
    [
      "a UTF-16 file",
      { "notes.txt": utf16 },
      `notes.txt (binary, at byte ${utf16.indexOf(Buffer.from(token, "utf16le"))})`,
    ],
  ])("finds a token behind %s", async (_, files, where) => {
    const { repo, base, head } = await attempt(files);
    expectOneSecret((await checkOutput(repo, base, head, [])).blocking, where);
  });

  it("reads no attributes of the repository's own: `info/attributes` calling every file binary changes nothing", async () => {
    const repo = await tempRepo();
    const base = await git(repo, ["rev-parse", "HEAD"]);
    writeFileSync(join(repo, ".git", "info", "attributes"), "* binary\n");
    const head = await commit(repo, { "ci.env": `TOKEN=${token}\n` });
    expectOneSecret((await checkOutput(repo, base, head, [])).blocking, "ci.env:1");
  });

  it("reads only what the attempt added to a binary file", async () => {
    const before = binaryWith(`TOKEN=${token}`);
    const { repo, base, head } = await attempt(
      { "logo.png": Buffer.concat([before, Buffer.from("a new chunk of printable text"), Buffer.alloc(8)]) },
      { "logo.png": before },
    );
    expect(await checkOutput(repo, base, head, [])).toEqual({ blocking: [], concerns: [] });
  });
});

describe("secrets as names", () => {
  it.each([
    ["a file", `keys/${token}.txt`, `keys/${"*".repeat(token.length)}.txt`],
    ["a directory", `${token}/notes.txt`, `${"*".repeat(token.length)}/notes.txt`],
  ])("finds a token used as the name of %s, and never shows it", async (_, path, masked) => {
    const { repo, base, head } = await attempt({ [path]: "nothing to see\n" });
    expectOneSecret((await checkOutput(repo, base, head, [])).blocking, `the name of ${masked}`);
  });

  it("masks the name in every finding about that file", async () => {
    const { repo, base, head } = await attempt({ [`.github/${token}`]: `TOKEN=${token}\n` });
    const { blocking } = await checkOutput(repo, base, head, []);
    expect(blocking).toHaveLength(3);
    for (const finding of blocking) expect(finding).not.toContain(token);
  });
});

describe("encoded secrets", () => {
  it.each([
    ["base64", Buffer.from(`export GH_TOKEN=${token}`).toString("base64"), "base64"],
    ["base64url", Buffer.from(`TOKEN=${token}?>`).toString("base64url"), "base64"],
    ["hex", Buffer.from(`TOKEN=${token}`).toString("hex"), "hex"],
    ["base64 of hex", Buffer.from(Buffer.from(token).toString("hex")).toString("base64"), "base64"],
  ])("finds a token encoded in %s", async (_, encoded, encoding) => {
    const { repo, base, head } = await attempt({
      "fixtures.ts": `// data\nexport const blob = "${encoded}";\n`,
    });
    expectOneSecret(
      (await checkOutput(repo, base, head, [])).blocking,
      `fixtures.ts:2 (${encoding}-encoded)`,
    );
  });

  it("lets encoded data that is not text through: random bytes, hashes, a PNG as base64", async () => {
    const { repo, base, head } = await attempt({
      "data.ts": [
        `export const sha = "${"0123456789abcdef".repeat(4)}";`,
        `export const png = "${binaryWith("hello").toString("base64")}";`,
        `export const id = "${Buffer.from(Array.from({ length: 48 }, (_, i) => (i * 37) % 256)).toString("base64")}";`,
        `export const words = "${Buffer.from("just some words of plain prose, nothing secret").toString("base64")}";`,
      ].join("\n"),
    });
    expect(await checkOutput(repo, base, head, [])).toEqual({ blocking: [], concerns: [] });
  });
});

describe("a file too large to read", () => {
  it("is refused with one line naming it, its size and the limit; the other files are still read", async () => {
    const { repo, base, head } = await attempt({
      "data/big.bin": Buffer.alloc(3 * 1024 * 1024 + 512 * 1024, 1),
      "ci.env": `TOKEN=${token}\n`,
    });
    const { blocking } = await checkOutput(repo, base, head, [], { maxFileBytes: 1024 * 1024 });
    expectOneSecret(blocking.slice(0, 1), "ci.env:1");
    expect(blocking.slice(1)).toEqual([
      "data/big.bin is 3.5 MiB, more than the 1.0 MiB the output checks read of one file: keep files that large out of the task's work",
    ]);
  });
});
