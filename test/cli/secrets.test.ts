// Secrets planted in every place a user gives one (model base URL, API key, PostgreSQL URL in each form, PGPASSWORD):
// after a failure of each kind, none shows in any CLI output, in the log, or in the data dir's files.
import fs from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openPgliteStore } from "../../src/events/pgliteStore.ts";
import { copyPgliteTemplate, removeDir } from "../support/pglite.ts";
import { cli, cliEnv, jsonLines, type CliResult } from "./support.ts";

const SECRETS = {
  modelUrlPassword: "ModelUrlPw-7f3a91",
  modelQueryKey: "ModelQueryKey-2c8e44",
  apiKey: "sk-PlantedApiKey0123456789abcdef",
  pgUrlPassword: "PgUrlPw-5d1b77",
  pgQueryPassword: "PgQueryPw-9e6c02",
  pgEnvPassword: "PgEnvPw-3a4f58",
};
const planted = Object.values(SECRETS);

/** Every planted secret found in `text`, by name. */
const leaks = (text: string) =>
  Object.entries(SECRETS)
    .filter(([, s]) => text.includes(s))
    .map(([name]) => name);
const output = (r: CliResult) => `${r.stdout}\n${r.stderr}`;

// Nothing listens on port 9 (discard): every connection is refused at once.
const MODEL_URL = `http://model-user:${SECRETS.modelUrlPassword}@127.0.0.1:9/v1?api_key=${SECRETS.modelQueryKey}`;
const PG_URLS = [
  `postgres://pg-user:${SECRETS.pgUrlPassword}@127.0.0.1:9/db`,
  `postgres://pg-user@127.0.0.1:9/db?password=${SECRETS.pgQueryPassword}`,
  "postgres://pg-user@127.0.0.1:9/db",
];
// cliEnv drops OPENAI_API_KEY (a user without a key): set it after.
const env = { ...cliEnv({ PGPASSWORD: SECRETS.pgEnvPassword }), OPENAI_API_KEY: SECRETS.apiKey };

let dataDir: string;
let run: CliResult;
let rootId: string;

beforeAll(async () => {
  dataDir = await copyPgliteTemplate();
  // The model client cannot even build its request (a URL with credentials): the SDK's error quotes the URL.
  run = await cli(["run", "--events", "--data-dir", dataDir, "--base-url", MODEL_URL, "Say hello"], { env });
  const created = jsonLines<{ streamId: string; type: string }>(
    (await cli(["events", "--json", "--data-dir", dataDir], { env })).stdout,
  );
  rootId = created.find((e) => e.type === "ContextCreated")!.streamId;
});
afterAll(async () => {
  await removeDir(dataDir);
});

describe("when a run's model call fails with the base URL and key planted", () => {
  it("records the failure, and prints no secret in the run's banner, events or outcome", () => {
    expect(run.code, output(run)).not.toBe(0);
    expect(output(run)).toMatch(/ModelCallFailed|failed/);
    expect(output(run)).toContain("model-user:***@127.0.0.1:9");
    expect(leaks(output(run))).toEqual([]);
  });

  it("keeps every secret out of the whole log (every column of every event)", async () => {
    const store = await openPgliteStore({ dataDir });
    try {
      const { rows } = await store.sql.query<{ row: string }>(
        "SELECT e::text AS row FROM events e ORDER BY global_position",
      );
      expect(rows.length).toBeGreaterThan(3);
      const failures = rows.filter((r) => /ModelCallFailed|RunFailed/.test(r.row));
      expect(failures.length, "the failure was stored").toBeGreaterThan(0);
      // The SDK's error quotes the URL: it reached the stored text, redacted, so a leak would show here.
      expect(failures.map((r) => r.row).join("\n")).toContain("model-user:***@127.0.0.1:9");
      expect(leaks(rows.map((r) => r.row).join("\n"))).toEqual([]);
    } finally {
      await store.close();
    }
  });

  it("keeps every secret out of the data dir's files", async () => {
    const found: string[] = [];
    const walk = async (dir: string): Promise<void> => {
      for (const entry of await fs.readdir(dir, { withFileTypes: true })) {
        const p = path.join(dir, entry.name);
        if (entry.isDirectory()) await walk(p);
        else {
          const bytes = await fs.readFile(p);
          for (const s of planted) if (bytes.includes(s)) found.push(`${path.relative(dataDir, p)}: ${s}`);
        }
      }
    };
    await walk(dataDir);
    expect(found).toEqual([]);
  });

  it.each([
    ["events", () => ["events", "--full", "--data-dir", dataDir]],
    ["events --json", () => ["events", "--json", "--data-dir", dataDir]],
    ["audit --full", () => ["audit", rootId, "--full", "--data-dir", dataDir]],
    ["audit --json", () => ["audit", rootId, "--json", "--data-dir", dataDir]],
    ["contexts --json", () => ["contexts", "--json", "--data-dir", dataDir]],
  ])("prints no secret in %s", async (_name, args) => {
    const r = await cli(args(), { env });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.length).toBeGreaterThan(0);
    expect(leaks(output(r))).toEqual([]);
  });
});

describe("when the PostgreSQL server cannot be reached with the password planted in the URL or PGPASSWORD", () => {
  it.each(PG_URLS.map((url, i) => [i, url]))(
    "prints one error line without the secret (URL form %i)",
    async (_i, url) => {
      const r = await cli(["contexts", "--store", url as string], { env });
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/cannot open the PostgreSQL event log at postgres:\/\/pg-user/);
      expect(leaks(output(r))).toEqual([]);
    },
  );

  it("prints no secret in run's banner, suggestions or error", async () => {
    const r = await cli(["run", "--store", PG_URLS[1]!, "--base-url", MODEL_URL, "Say hello"], { env });
    expect(r.code).not.toBe(0);
    expect(leaks(output(r))).toEqual([]);
  });
});
