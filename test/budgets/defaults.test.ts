// Where a tree's budget comes from when its root is created without one: its project's, else its profile's; both
// checked strictly, so a misspelt key is refused (naming it) instead of leaving a tree without the budget it was meant to have.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { EventStore } from "../../src/index.ts";
import { loadConfig } from "../../src/cli/config.ts";
import { freshPgliteStore } from "../support/pglite.ts";
import { closeRuntimes, runtimeWith } from "../delegation/support.ts";

let store: EventStore;
let dir: string;
beforeAll(async () => {
  store = await freshPgliteStore();
  dir = mkdtempSync(join(tmpdir(), "budget-defaults-"));
});
afterEach(closeRuntimes);
afterAll(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

const profiles = (name: string, json: unknown): string => {
  const root = join(dir, name);
  mkdirSync(join(root, "capped"), { recursive: true });
  writeFileSync(join(root, "capped", "profile.json"), JSON.stringify(json));
  return root;
};

const answer = () => ({ text: "ok" });

describe("when a root is created without a budget", () => {
  it("takes its project's budget, else its profile's, and an explicit one over both", async () => {
    const { rt } = await runtimeWith(store, answer, {
      profiles: [profiles("good", { title: "Capped", budget: { modelCalls: 7 } })],
      projects: { thrifty: { budget: { costUsd: 0.25 } } },
    });
    expect((await rt.budget((await rt.createContext({ profile: "capped" })).id)).limits).toEqual({ modelCalls: 7 });
    expect((await rt.budget((await rt.createContext({ profile: "capped", project: "thrifty" })).id)).limits).toEqual({
      costUsd: 0.25,
    });
    expect(
      (
        await rt.budget(
          (await rt.createContext({ profile: "capped", project: "thrifty", budget: { totalTokens: 9 } })).id,
        )
      ).limits,
    ).toEqual({ totalTokens: 9 });
    expect((await rt.budget((await rt.createContext()).id)).limits).toBeNull();
  });

  it("refuses a profile.json whose budget, or whose own keys, are misspelt, naming the key", async () => {
    await expect(
      runtimeWith(store, answer, { profiles: [profiles("typo", { title: "Capped", budgt: { modelCalls: 7 } })] }),
    ).rejects.toThrow(/profile\.json: unknown key 'budgt'/);
    await expect(
      runtimeWith(store, answer, { profiles: [profiles("inner", { title: "Capped", budget: { modelcalls: 7 } })] }),
    ).rejects.toThrow(/profile\.json: field 'budget': unknown key 'modelcalls'/);
    await expect(
      runtimeWith(store, answer, { profiles: [profiles("neg", { title: "Capped", budget: { totalTokens: -1 } })] }),
    ).rejects.toThrow(/field 'budget\.totalTokens'/);
  });

  it("refuses an actorzero.config.json whose project budget or limits are misspelt, naming the field", async () => {
    const cwd = join(dir, "cfg");
    mkdirSync(cwd, { recursive: true });
    writeFileSync(
      join(cwd, "actorzero.config.json"),
      JSON.stringify({ projects: { p: { budget: { totalTokenz: 1 } } } }),
    );
    expect(() => loadConfig(cwd)).toThrow(
      /^actorzero\.config\.json: projects\.p\.budget: Unrecognized key: "totalTokenz"$/,
    );
    writeFileSync(
      join(cwd, "actorzero.config.json"),
      JSON.stringify({ projects: { p: { budget: { costUsd: -2 } } }, limits: { defaultMaxOutputTokens: 512 } }),
    );
    expect(() => loadConfig(cwd)).toThrow(/^actorzero\.config\.json: projects\.p\.budget\.costUsd: /);
    writeFileSync(
      join(cwd, "actorzero.config.json"),
      JSON.stringify({ projects: { p: { budget: { costUsd: 2 } } }, limits: { defaultMaxOutputTokens: 512 } }),
    );
    expect(loadConfig(cwd)).toEqual({
      projects: { p: { budget: { costUsd: 2 } } },
      limits: { defaultMaxOutputTokens: 512 },
    });
  });
});
