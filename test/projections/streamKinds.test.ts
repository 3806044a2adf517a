// Control requests are told apart by their stream's kind: the folds never see them, and a context's view is the
// same with or without a request beside it in the log.
import { describe, expect, it } from "vitest";
import { asContextId, asRunId } from "../../src/events/ids.ts";
import type { RecordedEvent } from "../../src/events/schema.ts";
import { controlStreamOf, streamKindOf } from "../../src/events/streams.ts";
import { ALL_PROJECTIONS } from "../../src/projections/index.ts";
import { foldEvents, isFolded, type Projection } from "../../src/projections/projection.ts";

const id = "0b5d2f8e-3c1a-4e6b-9d7f-1a2b3c4d5e6f";
const runId = asRunId("7c9e6679-7425-40de-944b-e07fc1f90ae7");
const at = "2026-01-01T00:00:00.000Z";
const row = (
  position: number,
  streamId: string,
  version: number,
  fact: Pick<RecordedEvent, "type" | "data">,
): RecordedEvent =>
  ({
    ...fact,
    eventId: `00000000-0000-4000-8000-${String(position).padStart(12, "0")}`,
    streamId,
    streamVersion: version,
    globalPosition: position,
    schemaVersion: 1,
    metadata: {},
    recordedAt: at,
  }) as RecordedEvent;

describe("given a log with a control request beside a context's stream", () => {
  const created = row(1, id, 1, {
    type: "ContextCreated",
    data: {
      contextId: asContextId(id),
      parentContextId: null,
      rootContextId: asContextId(id),
      agentNumber: 0,
      parentAgentNumber: null,
      slot: null,
      depth: 0,
      kind: "root",
      name: "a",
      label: "a",
      profile: "default",
      project: null,
      modelOverride: null,
    },
  } as Pick<RecordedEvent, "type" | "data">);
  const started = row(2, id, 2, { type: "RunStarted", data: { runId, model: "m", superior: null } } as Pick<
    RecordedEvent,
    "type" | "data"
  >);
  const request = row(3, controlStreamOf(id), 1, {
    type: "RunControlRequested",
    data: { contextId: asContextId(id), runId, action: "stop" },
  } as Pick<RecordedEvent, "type" | "data">);

  it("when its streams are asked their kind, then the context's is a context and the request's a control stream", () => {
    expect(streamKindOf(id)).toBe("context");
    expect(streamKindOf(controlStreamOf(id))).toBe("control");
    expect(streamKindOf(`${id}:budget`)).toBe("budget");
    expect([created, started, request].map(isFolded)).toEqual([true, true, false]);
  });

  it("when every projection folds it, then each state is the one folded without the request", () => {
    for (const p of ALL_PROJECTIONS as readonly Projection<unknown>[]) {
      const withRequest = foldEvents(p, [created, started, request]);
      const without = foldEvents(p, [created, started]);
      expect([...withRequest.keys()], p.name).toEqual([...without.keys()]);
      expect(JSON.parse(JSON.stringify([...withRequest.entries()])), p.name).toEqual(
        JSON.parse(JSON.stringify([...without.entries()])),
      );
    }
  });
});
