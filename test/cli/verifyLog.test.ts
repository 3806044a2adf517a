// verify-log against an auditor's tampering: raw SQL on a closed data dir with the append-only trigger switched off.
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { PGlite } from "@electric-sql/pglite";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GENESIS_HASH_SQL, ROW_ENCODING_SQL } from "../../src/events/chainSql.ts";
import { StoreError } from "../../src/events/errors.ts";
import { pgliteStartParams, walSegmentBytes } from "../../src/events/pgliteImage.ts";
import { openPgliteStore } from "../../src/events/pgliteStore.ts";
import { openProjections } from "../../src/projections/engine.ts";
import { verifyWholeLog, type WholeLogVerification } from "../../src/projections/wholeLogVerification.ts";
import { copyPgliteTemplate, removeDir } from "../support/pglite.ts";
import { cli, expectOneLineError, jsonLines } from "./support.ts";

type EventJson = { position: number; streamId: string; streamVersion: number; type: string; data: Record<string, any> };

let base: string;
let events: EventJson[];
const dirs: string[] = [];

beforeAll(async () => {
  base = await copyPgliteTemplate();
  const run = await cli(["run", "--data-dir", base, "Plan a picnic for twelve people"]);
  expect(run.code, run.stderr).toBe(0);
  events = jsonLines<EventJson>((await cli(["events", "--json", "--data-dir", base])).stdout);
});
afterAll(async () => {
  await removeDir(base);
  for (const d of dirs) await fs.rm(d, { recursive: true, force: true });
});

/** A copy of the demo log, for one test to damage. */
const copy = async (): Promise<string> => {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), "actorzero-tamper-"));
  dirs.push(dir);
  await fs.cp(base, dir, { recursive: true });
  await fs.rm(path.join(dir, "actorzero.lock"), { force: true });
  return dir;
};

/** Every file under `dir` with its size and modification time: what a command that writes nothing leaves as it was. */
const filesOf = async (dir: string) => {
  const entries = await fs.readdir(dir, { recursive: true, withFileTypes: true });
  const files = await Promise.all(
    entries
      .filter((e) => e.isFile())
      .map(async (e) => {
        const file = path.join(e.parentPath, e.name);
        const stat = await fs.stat(file);
        return `${path.relative(dir, file)} ${stat.size} ${stat.mtimeMs}`;
      }),
  );
  return files.sort();
};

/** Raw SQL on the closed data dir, as a superuser with triggers off (what an auditor fears). */
const tamper = async (dir: string, sql: string) => {
  const db = await PGlite.create({ dataDir: dir, startParams: pgliteStartParams(walSegmentBytes(dir)) });
  try {
    await db.exec(`SET session_replication_role = replica; ${sql}`);
  } finally {
    await db.close();
  }
};

const verify = async (
  dir: string,
  options: Parameters<typeof verifyWholeLog>[1] = {},
): Promise<WholeLogVerification> => {
  const store = await openPgliteStore({ dataDir: dir, schema: "existing" });
  try {
    return await verifyWholeLog(store, options);
  } finally {
    await store.close();
  }
};

const tampered = async (sql: string) => {
  const dir = await copy();
  await tamper(dir, sql);
  return verify(dir);
};

const first = (type: string, where: (e: EventJson) => boolean = () => true) =>
  events.find((e) => e.type === type && where(e))!;
const last = () => events[events.length - 1]!;

/** The hash an event's link should have: after its stream's previous event (the attacker's formula). */
const STREAM_LINK_SQL = `sha256(coalesce((SELECT p.hash FROM events p WHERE p.stream_id = e.stream_id AND p.stream_version < e.stream_version
  ORDER BY p.stream_version DESC LIMIT 1), ${GENESIS_HASH_SQL}) || ${ROW_ENCODING_SQL})`;

/**
 * Sets each hash from position `from` on as the append would have, then throws the seals away and seals
 * the log again as the sealer would: an attacker who knows the algorithm.
 */
const rechain = (from: number) => `
  DO $$ DECLARE r record; BEGIN
    FOR r IN SELECT global_position FROM events WHERE global_position >= ${from} ORDER BY global_position LOOP
      UPDATE events e SET hash = ${STREAM_LINK_SQL} WHERE e.global_position = r.global_position;
    END LOOP;
  END $$;
  DELETE FROM actorzero_seals; DELETE FROM actorzero_verified;
  SELECT actorzero_seal(max(global_position)) FROM events;`;

/** The event after `e` in its own stream (the one whose link names it). */
const nextInStream = (e: EventJson) => events.find((x) => x.streamId === e.streamId && x.position > e.position);

describe("given the log of a finished demo run", () => {
  it("verifies it: every event chained, no problem, the head is the last event", async () => {
    const result = await verify(await copy());
    expect(result.problems).toEqual([]);
    expect(result.ok).toBe(true);
    expect(result.events).toBe(events.length);
    expect(result.head.position).toBe(last().position);
    expect(result.head.hash).toMatch(/^[0-9a-f]{64}$/);
    expect(result.unchained).toBe(0);
    expect(result.projections?.ok).toBe(true);
  });
});

describe("when the log was changed with the append-only trigger off", () => {
  it("catches an edited final response of an earlier run, at its position", async () => {
    const e = first("RunCompleted");
    const r = await tampered(
      `UPDATE events SET data = jsonb_set(data, '{response}', '"All is well."') WHERE global_position = ${e.position}`,
    );
    expect(r.ok).toBe(false);
    expect(r.problems[0]).toMatchObject({
      position: e.position,
      problem: expect.stringMatching(/hash does not follow/),
    });
  });

  it("catches an edited field no projection reads (ModelCalled.model)", async () => {
    const e = first("ModelCalled");
    const r = await tampered(
      `UPDATE events SET data = jsonb_set(data, '{model}', '"gpt-cheap"') WHERE global_position = ${e.position}`,
    );
    expect(r.problems[0]).toMatchObject({
      position: e.position,
      problem: expect.stringMatching(/hash does not follow/),
    });
    expect(r.projections?.ok, "no projection reads the model: only the chain sees this").toBe(true);
  });

  it("catches an edit followed by a plain replay that rebuilt the projections from it", async () => {
    const e = events.filter((x) => x.type === "RunCompleted").at(-1)!;
    const dir = await copy();
    await tamper(
      dir,
      `UPDATE events SET data = jsonb_set(data, '{response}', '"nothing to see"') WHERE global_position = ${e.position}`,
    );
    const store = await openPgliteStore({ dataDir: dir, readOnly: true });
    await (await openProjections(store)).rebuild();
    await store.close();
    const r = await verify(dir);
    expect(r.projections?.ok).toBe(true);
    expect(r.problems[0]).toMatchObject({ position: e.position });
  });

  it("catches a deleted event no projection reads: the next event's link, its stream's versions and the seal break", async () => {
    const e = first("ModelCalled");
    const next = nextInStream(e)!;
    const r = await tampered(`DELETE FROM events WHERE global_position = ${e.position}`);
    expect(r.problems).toContainEqual({
      position: next.position,
      problem: expect.stringMatching(/hash does not follow/),
    });
    expect(r.problems.map((p) => p.problem).join("\n")).toMatch(
      /the seal over positions \d+ to \d+ does not match the events there/,
    );
    expect(r.problems.map((p) => p.problem).join("\n")).toMatch(
      new RegExp(`stream ${e.streamId} jumps from version ${e.streamVersion - 1} to ${e.streamVersion + 1}`),
    );
  });

  it("catches a deleted last event: the log is shorter than its projections and its seal, and open refuses it", async () => {
    const dir = await copy();
    await tamper(dir, `DELETE FROM events WHERE global_position = ${last().position}`);
    const r = await verify(dir);
    expect(r.problems.map((p) => p.problem).join("\n")).toMatch(/events were removed from the log/);
    const refused = await openPgliteStore({ dataDir: dir }).then(
      () => null,
      (e: unknown) => e,
    );
    expect(refused).toBeInstanceOf(StoreError);
    expect(refused).toMatchObject({
      reason: "tampered",
      message: expect.stringMatching(new RegExp(`changed at position ${last().position}: the seal`)),
    });
    const store = await openPgliteStore({ dataDir: dir, readOnly: true });
    try {
      await expect(openProjections(store)).rejects.toThrow(
        /the log ends at position \d+, but its projections were built from events up to position \d+/,
      );
    } finally {
      await store.close();
    }
  });

  it("catches a TRUNCATE: a log shorter than its projections, which open refuses", async () => {
    const dir = await copy();
    await tamper(dir, "TRUNCATE events");
    const r = await verify(dir);
    expect(r.ok).toBe(false);
    expect(r.problems[0]!.problem).toMatch(
      new RegExp(
        `the log ends at position 0, but its projections were built from events up to position ${last().position}`,
      ),
    );
    const listed = await cli(["contexts", "--data-dir", dir]);
    expect(listed.code).toBe(1);
    expect(expectOneLineError(listed)).toMatch(/events were removed from the log/);
  });

  it("catches an event inserted in the middle in place of a deleted one, even with a hash that looks right", async () => {
    const e = first("ModelCalled");
    const r = await tampered(`
      CREATE TEMP TABLE victim AS SELECT * FROM events WHERE global_position = ${e.position};
      DELETE FROM events WHERE global_position = ${e.position};
      INSERT INTO events SELECT global_position, gen_random_uuid(), stream_id, stream_version, type, schema_version,
        jsonb_set(data, '{model}', '"forged"'), metadata, recorded_at, hash FROM victim;`);
    expect(r.problems[0]).toMatchObject({
      position: e.position,
      problem: expect.stringMatching(/hash does not follow/),
    });
  });

  it("catches an event inserted without a hash (around the append)", async () => {
    const e = last();
    const r = await tampered(`
      INSERT INTO events (event_id, stream_id, stream_version, type, schema_version, data, metadata, recorded_at)
      SELECT gen_random_uuid(), stream_id, stream_version + 1, type, schema_version, data, metadata, recorded_at FROM events WHERE global_position = ${e.position}`);
    expect(r.problems.find((p) => p.position !== null && p.position > e.position)).toMatchObject({
      problem: expect.stringMatching(/has no hash/),
    });
  });

  it("catches two events of a stream swapped in the log (reordered)", async () => {
    const [a, b] = events.filter((e) => e.streamId === events[0]!.streamId).slice(1, 3);
    const r = await tampered(`
      UPDATE events SET global_position = -1 WHERE global_position = ${a!.position};
      UPDATE events SET global_position = ${a!.position} WHERE global_position = ${b!.position};
      UPDATE events SET global_position = ${b!.position} WHERE global_position = -1;`);
    expect(r.problems[0]).toMatchObject({
      position: a!.position,
      problem: expect.stringMatching(/hash does not follow/),
    });
    expect(r.problems.map((p) => p.problem).join("\n")).toMatch(/goes back from version|jumps from version/);
  });

  it("catches an edited stream version, recorded time and metadata", async () => {
    const [x, y, z] = events.slice(3, 6);
    const r = await tampered(`
      UPDATE events SET stream_version = stream_version + 100 WHERE global_position = ${x!.position};
      UPDATE events SET recorded_at = recorded_at - interval '1 hour' WHERE global_position = ${y!.position};
      UPDATE events SET metadata = jsonb_set(metadata, '{actor}', '"someone else"') WHERE global_position = ${z!.position};`);
    expect(r.problems.filter((p) => /hash does not follow/.test(p.problem)).map((p) => p.position)).toEqual(
      expect.arrayContaining([x!.position, y!.position, z!.position]),
    );
  });

  it("catches an edit whose own hash was recomputed, at the next event of its stream and at its seal", async () => {
    const e = events.find((x) => x.type === "ModelCalled" && nextInStream(x) !== undefined)!;
    const next = nextInStream(e)!;
    const r = await tampered(`
      UPDATE events SET data = jsonb_set(data, '{model}', '"gpt-cheap"') WHERE global_position = ${e.position};
      UPDATE events e SET hash = ${STREAM_LINK_SQL} WHERE e.global_position = ${e.position};`);
    expect(
      r.problems.find((p) => p.position === e.position && /hash does not follow/.test(p.problem)),
      "its own link follows",
    ).toBeUndefined();
    expect(r.problems).toContainEqual({
      position: next.position,
      problem: expect.stringMatching(/hash does not follow/),
    });
    expect(r.problems.map((p) => p.problem).join("\n")).toMatch(/the seal over positions \d+ to \d+ does not match/);
  });

  it("catches the last event of a stream deleted, which no later link names: its seal no longer matches", async () => {
    const ends = events.filter((x) => nextInStream(x) === undefined && x.position !== last().position);
    const e = ends[0]!;
    const r = await tampered(`DELETE FROM events WHERE global_position = ${e.position}`);
    expect(r.ok).toBe(false);
    expect(r.problems.map((p) => p.problem).join("\n")).toMatch(
      /the seal over positions \d+ to \d+ does not match the events there/,
    );
  });

  it("catches an edited hash, a row that no longer decodes, and a moved chain start", async () => {
    const [x, y] = events.slice(2, 4);
    const r = await tampered(`
      UPDATE events SET hash = sha256('x'::bytea) WHERE global_position = ${x!.position};
      UPDATE events SET data = jsonb_set(data, '{runId}', '42') WHERE global_position = ${y!.position};
      UPDATE actorzero_chain SET after_position = 1;`);
    const text = r.problems.map((p) => `${p.position}: ${p.problem}`).join("\n");
    expect(text).toMatch(/^1: carries a hash but lies before the chain's start/m);
    expect(text).toContain(`${x!.position}: its hash does not follow`);
    expect(text).toMatch(new RegExp(`^${y!.position}: cannot be decoded: .*runId`, "m"));
  });

  it("reports the append-only trigger left disabled, or dropped", async () => {
    const off = await tampered("ALTER TABLE events DISABLE TRIGGER actorzero_events_append_only");
    expect(off.problems).toEqual([
      { position: null, problem: expect.stringMatching(/trigger actorzero_events_append_only is disabled/) },
    ]);
    const dropped = await tampered("DROP TRIGGER actorzero_events_append_only ON events");
    expect(dropped.problems).toEqual([
      { position: null, problem: expect.stringMatching(/trigger actorzero_events_append_only is missing/) },
    ]);
  });

  it("passes a chain rewritten from the edit on, which only an anchor kept outside the log catches", async () => {
    const untouched = await verify(await copy());
    const anchor = { position: untouched.head.position, hash: untouched.head.hash! };
    const e = first("RunCompleted");
    const dir = await copy();
    await tamper(
      dir,
      `UPDATE events SET data = jsonb_set(data, '{response}', '"All is well."') WHERE global_position = ${e.position}; ${rechain(e.position)}`,
    );
    expect((await verify(dir)).problems.filter((p) => /hash|seal/.test(p.problem))).toEqual([]);
    const since = await verify(dir, { since: anchor });
    expect(since.ok).toBe(false);
    expect(since.problems.map((p) => p.problem).join("\n")).toMatch(
      /seal's hash is .*, not the anchor's .*: the log before the anchor was changed/,
    );
  });
});

describe("actorzero verify-log", () => {
  it("exits 0 on the untouched log and prints only the head with --print-head", async () => {
    const dir = await copy();
    const ok = await cli(["verify-log", "--data-dir", dir]);
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout).toMatch(/^verified: \d+ events, the hash chain is intact up to the head \d+:[0-9a-f]{64}/);
    const printed = await cli(["verify-log", "--print-head", "--data-dir", dir]);
    expect(printed.code, printed.stderr).toBe(0);
    const head = printed.stdout.trim();
    expect(head).toMatch(new RegExp(`^${last().position}:[0-9a-f]{64}$`));
  });

  it("proves with --since that the log only grew after that head", async () => {
    const dir = await copy();
    const before = await verify(dir);
    const head = `${before.head.position}:${before.head.hash}`;
    const store = await openPgliteStore({ dataDir: dir });
    await store.append(events[0]!.streamId, [{ type: "ContextRenamed", data: { name: "later", label: "later" } }], {
      expectedVersion: "any",
    });
    await store.close();
    const since = await cli(["verify-log", "--since", head, "--data-dir", dir]);
    expect(since.code, since.stdout + since.stderr).toBe(0);
    expect(since.stdout).toContain(`the log only grew since the anchor ${head}`);
  });

  describe("when the log was edited", () => {
    const e = () => first("ModelCalled");
    let dir: string;
    beforeAll(async () => {
      dir = await copy();
      await tamper(
        dir,
        `UPDATE events SET data = jsonb_set(data, '{model}', '"gpt-cheap"') WHERE global_position = ${e().position}`,
      );
    });

    it("exits 1 and names the first bad position in JSON", async () => {
      const r = await cli(["verify-log", "--json", "--data-dir", dir]);
      expect(r.code).toBe(1);
      expect(JSON.parse(r.stdout)).toMatchObject({ ok: false, problems: [{ position: e().position }] });
    });

    it("exits 1 and prints the first bad position and what is wrong", async () => {
      const text = await cli(["verify-log", "--data-dir", dir]);
      expect(text.code).toBe(1);
      expect(text.stdout).toMatch(new RegExp(`^FAILED: position ${e().position}: its hash does not follow`));
    });

    it("ends audit with a line saying the log did not verify, and where", async () => {
      const audit = await cli(["audit", events[0]!.streamId, "--data-dir", dir]);
      expect(audit.code, audit.stderr).toBe(0);
      expect(audit.stdout.trim().split("\n").at(-1)).toMatch(
        new RegExp(`^log NOT verified: position ${e().position}: its hash does not follow`),
      );
    });
  });

  it("ends audit with a line saying the log verified", async () => {
    const audit = await cli(["audit", events[0]!.streamId, "--data-dir", await copy()]);
    expect(audit.code, audit.stderr).toBe(0);
    expect(audit.stdout.trim().split("\n").at(-1)).toMatch(
      new RegExp(
        `^log verified: hash chain intact over ${events.length} events, head ${last().position}:[0-9a-f]{16}…$`,
      ),
    );
  });

  it("exits 2 with one clear line for a directory that is not a log, writing nothing", async () => {
    const other = await fs.mkdtemp(path.join(os.tmpdir(), "actorzero-notalog-"));
    dirs.push(other);
    await fs.writeFile(path.join(other, "notes.txt"), "not a log");
    const notLog = await cli(["verify-log", "--data-dir", other]);
    expect(notLog.code).toBe(2);
    expect(expectOneLineError(notLog)).toMatch(/no event log in .*actorzero-notalog-/);
    expect(await fs.readdir(other)).toEqual(["notes.txt"]);
  });

  it("exits 2 with one clear line for another application's database, creating nothing in it", async () => {
    // Another application's database: an events table of its own, no actorzero schema.
    const foreign = await copyPgliteTemplate();
    dirs.push(foreign);
    await tamper(
      foreign,
      `DROP TABLE events, actorzero_schema_migrations, actorzero_chain, actorzero_stream_chains, actorzero_seals, actorzero_verified CASCADE;
      CREATE TABLE events (id serial PRIMARY KEY, body text);`,
    );
    const r = await cli(["verify-log", "--data-dir", foreign]);
    expect(r.code).toBe(2);
    expect(expectOneLineError(r)).toMatch(/holds no actorzero event log/);
    const after = await PGlite.create({ dataDir: foreign, startParams: pgliteStartParams(walSegmentBytes(foreign)) });
    expect(
      (
        await after.query<{ n: number }>(
          "SELECT count(*)::int AS n FROM pg_tables WHERE tablename LIKE 'actorzero%' OR tablename LIKE 'projection%'",
        )
      ).rows[0]!.n,
    ).toBe(0);
    await after.close();
  });

  it("exits 2 with one clear line for a truncated data dir, changing no file in it", async () => {
    const truncated = await copy();
    await fs.rm(path.join(truncated, "base"), { recursive: true });
    const before = await filesOf(truncated);
    const t = await cli(["verify-log", "--data-dir", truncated]);
    expect(t.code).toBe(2);
    expect(expectOneLineError(t)).toMatch(/damaged|cannot/);
    expect(await filesOf(truncated)).toEqual(before);
  });
});

describe("actorzero fork", () => {
  let dir: string;
  let forkId: string;
  const root = () => events[0]!.streamId;
  const cutAt = () =>
    first("RunCompleted", (e) => e.streamId === root())?.position ??
    events.filter((e) => e.streamId === root()).at(-1)!.position;
  beforeAll(async () => {
    dir = await copy();
  });

  it("creates a new root from a context's history up to a position, and says how to go on", async () => {
    const r = await cli(["fork", root().slice(0, 8), "--at", String(cutAt()), "--json", "--data-dir", dir]);
    expect(r.code, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout) as { contextId: string; forkedFrom: { contextId: string; position: number } };
    expect(out.forkedFrom).toEqual({ contextId: root(), position: cutAt() });
    expect(out.contextId).not.toBe(root());
    forkId = out.contextId;
  });

  it("shows the link in the fork's audit, at the top with the fork's identity", async () => {
    const audit = await cli(["audit", forkId, "--data-dir", dir]);
    expect(audit.code, audit.stderr).toBe(0);
    const lines = audit.stdout.split("\n");
    expect(lines[0]).toMatch(new RegExp(`^Audit of A0 .*\\(${forkId}\\)$`));
    expect(lines[1]).toBe(`forked from ${root()} at log position ${cutAt()} (actorzero audit ${root().slice(0, 8)})`);
  });

  it("refuses a position outside the context's stream with one line naming --at's value", async () => {
    const other = events.find((e) => e.streamId !== root())!.position;
    const r = await cli(["fork", root().slice(0, 8), "--at", String(other), "--data-dir", dir]);
    expect(r.code).toBe(1);
    expect(expectOneLineError(r)).toMatch(
      new RegExp(`at: expected the log position of an event of context ${root()}.*got ${other}`),
    );
  });
});
