// The README's "Install it in your service" examples are the files in examples/, and the offline one prints what happened.
import { readFileSync } from "node:fs";
import { afterEach, describe, expect, it, vi } from "vitest";

const read = (path: string) => readFileSync(new URL(`../${path}`, import.meta.url), "utf8");

describe("the README's embedding examples", () => {
  afterEach(() => vi.restoreAllMocks());

  it("given the README, when it shows the offline and OpenAI examples, then each is its examples/ file verbatim", () => {
    const readme = read("README.md");
    for (const file of ["examples/embedOffline.mjs", "examples/embedOpenAI.mjs"]) {
      expect(readme).toContain("```js\n" + read(file).trimEnd() + "\n```");
    }
  });

  it("given no API key, when the offline example runs, then it prints the delegation the README says it prints", async () => {
    const lines: string[] = [];
    vi.spyOn(console, "log").mockImplementation((...args: unknown[]) => void lines.push(args.join(" ")));
    const example = "../examples/embedOffline.mjs"; // plain JS, no declarations: imported by a path the checker does not follow
    await import(example);
    const shown = read("README.md").split("It prints:\n\n```\n")[1]?.split("\n```")[0];
    expect(shown).toBeDefined();
    expect(lines.join("\n")).toBe(shown);
  }, 120_000);
});
