// Decoding stored rows: frozen rows of today's versions still decode; old versions climb through upcasters.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { decodeRow, verifyRow, SCHEMA_VERSIONS, type EventRow, type SchemaVersions } from "../../src/events/codec.ts";
import { EventDecodeError } from "../../src/events/errors.ts";
import { EVENT_TYPES } from "../../src/events/schema.ts";
import { rootCreated } from "../support/rootCreated.ts";

// One frozen file per batch of types: rows are never regenerated, types added later get their own file.
const frozen = (name: string) =>
  (JSON.parse(readFileSync(new URL(`../fixtures/${name}`, import.meta.url), "utf8")) as { rows: EventRow[] }).rows;
const fixture = {
  rows: [
    ...frozen("events-v1.json"),
    ...frozen("events-v1-approvals.json"),
    ...frozen("events-v1-control.json"),
    ...frozen("events-v1-compaction.json"),
    ...frozen("events-v1-budgets.json"),
    ...frozen("events-v1-flow.json"),
    ...frozen("events-v1-remote.json"),
  ],
};

const row = (over: Partial<EventRow>): EventRow => ({
  global_position: "41",
  event_id: "00000000-0000-4000-8000-000000000041",
  stream_id: "ctx-1",
  stream_version: 3,
  type: "ContextRenamed",
  schema_version: 1,
  data: {},
  metadata: { correlationId: null, causationId: null, actor: null },
  recorded_at: "2026-11-30T00:00:00.000Z",
  ...over,
});

describe("when rows written at schema version 1 are read back", () => {
  it("decodes the frozen sample of every event type", () => {
    expect(fixture.rows.map((r) => r.type).sort()).toEqual([...EVENT_TYPES].sort());
    for (const r of fixture.rows) {
      const e = decodeRow(r);
      expect(e.type).toBe(r.type);
      expect(e.data).toEqual(r.data);
      expect(e.globalPosition).toBe(Number(r.global_position));
    }
  });
});

describe("when rows of older types carrying later optional fields are read back", () => {
  it("decodes them with those fields, as they were written", () => {
    const rows = frozen("events-v1-budget-fields.json");
    expect(rows.length).toBeGreaterThan(0);
    for (const r of rows) {
      const e = decodeRow(r);
      expect(e.type).toBe(r.type);
      expect(e.data).toEqual(r.data);
    }
  });
});

// A registry in which ContextRenamed has reached version 3: v1 had `title`, v2 renamed it `name`, v3 added `label`.
const evolved: SchemaVersions = {
  current: { ...SCHEMA_VERSIONS.current, ContextRenamed: 3 },
  upcasters: {
    ContextRenamed: {
      1: (d) => ({ name: (d as { title: string }).title }),
      2: (d) => ({ ...(d as object), label: (d as { name: string }).name }),
    },
  },
};

describe("when a row of an older schema version is read", () => {
  it("upcasts it one version at a time, then validates it against today's schema", () => {
    const e = decodeRow(row({ data: { title: "planner" } }), evolved);
    expect(e).toMatchObject({ type: "ContextRenamed", data: { name: "planner", label: "planner" }, schemaVersion: 3 });
    expect(decodeRow(row({ schema_version: 2, data: { name: "p2" } }), evolved).data).toEqual({
      name: "p2",
      label: "p2",
    });
  });

  it("refuses a version with no upcaster, naming the row's global position", () => {
    const missing: SchemaVersions = { current: evolved.current, upcasters: {} };
    expect(() => decodeRow(row({ data: { title: "x" } }), missing)).toThrow(EventDecodeError);
    expect(() => decodeRow(row({ data: { title: "x" } }), missing)).toThrow(
      /global_position 41 .*no upcaster from version 1/,
    );
  });

  it("refuses a version newer than this runtime knows", () => {
    expect(() => decodeRow(row({ schema_version: 9, data: { name: "n", label: "l" } }))).toThrow(
      /newer than this runtime knows/,
    );
  });

  it("refuses an upcast result that does not match today's schema", () => {
    const broken: SchemaVersions = {
      current: evolved.current,
      upcasters: { ContextRenamed: { 1: (d) => d, 2: (d) => d } },
    };
    expect(() => decodeRow(row({ data: { title: "x" } }), broken)).toThrow(/global_position 41/);
  });
});

describe("when a row at today's version is read (a row the store wrote is trusted)", () => {
  const created = (data: Record<string, unknown>) =>
    row({ type: "ContextCreated", data: { ...rootCreated("ctx-1", "n").data, ...data } });

  it("refuses a field of the wrong kind or a missing field, naming the position and the field", () => {
    expect(() => decodeRow(row({ type: "MessageReceived", data: { runId: "r", text: 7, sender: "user" } }))).toThrow(
      /global_position 41 .*data\.text: expected string, received number/,
    );
    expect(() => decodeRow(created({ depth: undefined }))).toThrow(/data\.depth: required, missing/);
    expect(() => decodeRow(created({ name: null }))).toThrow(/data\.name: expected string, received null/);
    expect(() => decodeRow(row({ data: "not an object" }))).toThrow(/data: expected an object, received string/);
    expect(() =>
      decodeRow(
        row({ data: { name: "a", label: "b" }, metadata: { correlationId: 3, causationId: null, actor: null } }),
      ),
    ).toThrow(/metadata\.correlationId: expected string, received number/);
  });

  it("leaves what only a full parse finds (formats, enums, nested shapes) to verifyRow, which names the position", () => {
    const subtle = created({ kind: "grandchild", agentNumber: -1 });
    expect(decodeRow(subtle).data).toMatchObject({ kind: "grandchild", agentNumber: -1 });
    expect(() => verifyRow(subtle)).toThrow(EventDecodeError);
    expect(() => verifyRow(subtle)).toThrow(/global_position 41 .*kind/);
  });

  it("decodes every frozen sample the same way with and without the full parse", () => {
    for (const r of fixture.rows) expect(decodeRow(r)).toEqual(verifyRow(r));
  });
});
