// The embedded store's appends go to PGlite as raw Query messages: the answers read back, the errors, and the serialisation with transactions.
import type { PGlite } from "@electric-sql/pglite";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execRaw, PgliteServerError, queryMessage, readAnswer } from "../../src/events/pgliteRawExec.ts";
import { openPgliteStore } from "../../src/events/pgliteStore.ts";
import type { EventStore } from "../../src/events/store.ts";

describe("execRaw on an in-memory PGlite", () => {
  let store: EventStore;
  let db: PGlite;
  beforeAll(async () => {
    store = await openPgliteStore();
    db = (store as unknown as { db: PGlite }).db;
  });
  afterAll(async () => {
    await store?.close();
  });

  it("answers a result per statement: json and jsonb parsed, NULL as null, other values as the server's text", async () => {
    const results = await execRaw(
      db,
      `SELECT 1 AS n, 'a b'::text AS t, NULL::int AS z, '{"b":[1,2],"a":null}'::jsonb AS j; SELECT '[1, "x"]'::json AS k, 'héllo ✓ 𝄞'::text AS u`,
    );
    expect(results).toEqual([
      { rows: [{ n: "1", t: "a b", z: null, j: { a: null, b: [1, 2] } }] },
      { rows: [{ k: [1, "x"], u: "héllo ✓ 𝄞" }] },
    ]);
  });

  it("answers every row of a statement, and an empty result for a statement that returns none", async () => {
    const results = await execRaw(
      db,
      `CREATE TEMP TABLE raw_rows (a int); INSERT INTO raw_rows SELECT g FROM generate_series(1, 3) g; SELECT a FROM raw_rows ORDER BY a`,
    );
    expect(results).toEqual([{ rows: [] }, { rows: [] }, { rows: [{ a: "1" }, { a: "2" }, { a: "3" }] }]);
  });

  it("rejects with the server's error, runs nothing after it and commits nothing of the message", async () => {
    const failing = execRaw(
      db,
      `CREATE TABLE raw_cut (a int); INSERT INTO raw_cut VALUES (1); SELECT 1 / 0; CREATE TABLE raw_after (a int)`,
    );
    await expect(failing).rejects.toBeInstanceOf(PgliteServerError);
    await expect(failing).rejects.toMatchObject({ code: "22012", message: "division by zero", severity: "ERROR" });
    const [{ rows }] = (await execRaw(
      db,
      `SELECT to_regclass('raw_cut')::text AS cut, to_regclass('raw_after')::text AS after`,
    )) as [{ rows: unknown[] }];
    expect(rows).toEqual([{ cut: null, after: null }]);
  });

  it("carries the SQLSTATE and the detail of a unique violation, as the append's retry reads them", async () => {
    await execRaw(db, `CREATE TABLE raw_unique (a int PRIMARY KEY); INSERT INTO raw_unique VALUES (7)`);
    await expect(execRaw(db, `INSERT INTO raw_unique VALUES (7)`)).rejects.toMatchObject({
      code: "23505",
      detail: "Key (a)=(7) already exists.",
    });
  });

  it("waits for a transaction in progress instead of running inside it", async () => {
    await execRaw(db, `CREATE TABLE raw_tx (a int)`);
    let inside: Promise<unknown> | undefined;
    let answered = false;
    await expect(
      store.sql.transaction(async (tx) => {
        await tx.exec(`INSERT INTO raw_tx VALUES (1)`);
        inside = execRaw(db, `SELECT count(*)::text AS n FROM raw_tx`).then((r) => ((answered = true), r));
        // Let every queued continuation run: the message must still be waiting for the transaction's end.
        for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
        expect(answered).toBe(false);
        throw new Error("roll back");
      }),
    ).rejects.toThrow("roll back");
    // Run after the rollback: inside the transaction it would have counted the row.
    expect(await inside).toEqual([{ rows: [{ n: "0" }] }]);
  });

  it("writes the SQL as UTF-8 after the message type and its length", () => {
    const message = queryMessage("SELECT 'é'");
    expect([...message]).toEqual([0x51, 0, 0, 0, 16, ...Buffer.from("SELECT 'é'", "utf8"), 0]);
  });
});

describe("readAnswer on bytes PGlite did not send", () => {
  it("refuses a message whose length runs past the answer, or a string with no end, instead of reading on", () => {
    expect(() => readAnswer(Uint8Array.from([0x43, 0, 0, 0, 40, 0x53]))).toThrow("malformed");
    expect(() => readAnswer(Uint8Array.from([0x45, 0, 0, 0, 7, 0x4d, 0x61, 0x62]))).toThrow("malformed");
  });
});

describe("the PGlite the raw path was written for", () => {
  // execRaw reaches past PGlite's public `exec` (its mutexes and the raw protocol stream). A PGlite upgrade
  // must come with a fresh look at those members: this pins the version and the members it uses.
  it("is the exact PGlite version the package pins, with the members execRaw calls", async () => {
    const { readFileSync } = await import("node:fs");
    const manifest = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as {
      dependencies: Record<string, string>;
    };
    const installed = JSON.parse(
      readFileSync(new URL("../../node_modules/@electric-sql/pglite/package.json", import.meta.url), "utf8"),
    ) as { version: string };
    expect(
      manifest.dependencies["@electric-sql/pglite"],
      "pin PGlite exactly: the raw path was checked against one version",
    ).toBe("0.5.17");
    expect(installed.version).toBe("0.5.17");
    const store = await openPgliteStore();
    try {
      const db = (store as unknown as { db: PGlite }).db as unknown as Record<string, unknown>;
      for (const member of ["_runExclusiveTransaction", "_runExclusiveQuery", "execProtocolRawStream"])
        expect(typeof db[member], member).toBe("function");
    } finally {
      await store.close();
    }
  });
});
