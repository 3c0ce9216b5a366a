/** Secrets for the output checks' tests, made when a test runs: no file of this repository holds one. */

/** Deterministic filler of `n` characters from `alphabet`. */
export function filler(
  n: number,
  alphabet = "abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789",
  seed = 7,
): string {
  let out = "";
  for (let i = 0, x = seed; i < n; i++) {
    x = (x * 1_103_515_245 + 12_345) % 2_147_483_648;
    out += alphabet[x % alphabet.length];
  }
  return out;
}

/** A GitHub classic token's shape, which secretlint's recommended rules find on its own. */
export function githubToken(seed = 7): string {
  return `ghp_${filler(36, undefined, seed)}`;
}
