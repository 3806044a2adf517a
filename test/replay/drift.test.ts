// Replaying a frozen fixture: an old format version still replays; a changed prompt file or tool schema is drift
// that names the request and the changed line.
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { FixtureFormatError, parseFixture } from "../../src/index.ts";
import { replayFixture } from "../../src/testing/index.ts";
import { freshPgliteStore, type FreshPgliteStore } from "../support/pglite.ts";
import { REPLAY_PROMPTS, weatherTool } from "./weatherTool.ts";

const V1 = JSON.parse(
  readFileSync(new URL("../fixtures/replay-v1/fixture-v1-weather.json", import.meta.url), "utf8"),
) as { formatVersion: number; contexts: { answers: string[] }[] };

let store: FreshPgliteStore;
const dirs: string[] = [];
beforeAll(async () => {
  store = await freshPgliteStore();
});
afterAll(async () => {
  await store?.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** A copy of the prompts the fixture was recorded under, with `file` rewritten by `edit`. */
const promptsWith = (file: string, edit: (text: string) => string): string => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "az-prompts-"));
  dirs.push(dir);
  cpSync(REPLAY_PROMPTS, dir, { recursive: true });
  writeFileSync(path.join(dir, file), edit(readFileSync(path.join(dir, file), "utf8")));
  return dir;
};

describe("given a fixture of format version 1, committed before the format changed", () => {
  it("when it is read, then it is upcast to the current version with its tool sets kept once", () => {
    expect(V1.formatVersion).toBe(1);
    const fx = parseFixture(V1);
    expect(fx.formatVersion).toBe(2);
    expect(Object.keys(fx.toolSets)).toHaveLength(1);
    expect(fx.calls.every((c) => fx.toolSets[c.request.toolSet] !== undefined && c.usage !== null)).toBe(true);
  });

  it("when it is replayed under the prompts it was recorded with, then it reaches its answer, the weather tool replayed", async () => {
    const result = await replayFixture(V1, { promptsDir: REPLAY_PROMPTS, store });
    expect(result.drift).toEqual([]);
    expect(result.replayed.contexts[0]!.answers).toEqual(V1.contexts[0]!.answers);
    expect(result.replayed.toolResults.find((t) => t.name === "weather")?.result).toBe("Sunny, 24 °C.");
  });
});

describe("when one prompt file changes", () => {
  it("then the replay fails, naming the request and the changed line", async () => {
    const prompts = promptsWith("system/01-role.md", (t) =>
      t.replace("use the other tools when they help", "never use other tools"),
    );
    const result = await replayFixture(V1, { promptsDir: prompts, store });
    expect(result.ok).toBe(false);
    const first = result.drift[0]!;
    expect(first.kind).toBe("request");
    expect(first.path).toBe("forecaster");
    expect(first.message).toContain("No recorded reply for the request of A0 (default), model call 1");
    expect(first.message).toContain("message 0 (system) changed:");
    expect(first.message).toMatch(
      /- line 2: Answer with the `response` tool; use the other tools when they help\.\n\s+\+ line 2: Answer with the `response` tool; never use other tools\./,
    );
    expect(result.drift.map((d) => d.kind)).toContain("answer");
  });
});

describe("when a tool's schema changes", () => {
  it("then the diff names the tool and the changed schema lines", async () => {
    const changed = weatherTool(z.object({ city: z.string().describe("The city"), days: z.number() }));
    const result = await replayFixture(V1, { promptsDir: REPLAY_PROMPTS, tools: [changed], store });
    expect(result.ok).toBe(false);
    const message = result.drift[0]!.message;
    expect(message).toContain("tool 'weather' schema changed:");
    expect(message).toMatch(/\+ line \d+: +"days": \{/);
    expect(message).not.toContain("message 0");
  });
});

describe("when a file is no fixture", () => {
  it("then reading it is refused in one line naming the field", () => {
    expect(() => parseFixture({ formatVersion: 9 })).toThrow(FixtureFormatError);
    expect(() => parseFixture({ formatVersion: 9 })).toThrow("field 'formatVersion': expected 1 or 2, got 9.");
    expect(() => parseFixture({ ...V1, calls: "x" })).toThrow(/field 'calls'/);
  });
});
