// The README's record/replay example is test/demoReplay.test.ts verbatim, so the example shown is the one that runs.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

const read = (path: string) => readFileSync(new URL(`../${path}`, import.meta.url), "utf8");

describe("the README's record/replay example", () => {
  it("given the README, when it shows the replay test, then it is test/demoReplay.test.ts verbatim", () => {
    expect(read("README.md")).toContain("```ts\n" + read("test/demoReplay.test.ts").trimEnd() + "\n```");
  });
});
