// Properties of the pure folds: total, replay from zero equals incremental application, idempotent.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decodeRow, encodeEvent } from "../../src/events/codec.ts";
import { DomainEvent, EVENT_TYPES, type RecordedEvent } from "../../src/events/schema.ts";
import { ALL_PROJECTIONS } from "../../src/projections/index.ts";
import { foldEvents, type Projection } from "../../src/projections/projection.ts";
import { domainEventArb, eventOfTypeArb } from "../../src/testing/arbitraries.ts";
import { recordedSequenceArb } from "../../src/testing/sequenceArbitraries.ts";

const projections = ALL_PROJECTIONS as readonly Projection<unknown>[];

/** States as the engine stores them: JSON, keys sorted so the comparison is of content only. */
const asStored = (states: Map<string, unknown>) =>
  [...states.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([key, state]) => ({ key, state: JSON.parse(JSON.stringify(state)) }));

const chunked = <T>(xs: readonly T[], sizes: readonly number[]): T[][] => {
  const out: T[][] = [];
  let i = 0;
  let k = 0;
  while (i < xs.length) {
    const n = sizes[k++ % Math.max(sizes.length, 1)] ?? xs.length;
    out.push(xs.slice(i, i + n));
    i += n;
  }
  return out;
};

describe("generated events", () => {
  it("satisfy the zod schema of their type, for every type", () => {
    for (const type of EVENT_TYPES) {
      fc.assert(
        fc.property(eventOfTypeArb(type), (event) => {
          expect(event.type).toBe(type);
          expect(DomainEvent.safeParse(event).success).toBe(true);
        }),
        { numRuns: 30 },
      );
    }
  });

  it("round-trip through encodeEvent and decodeRow to an equal event", () => {
    fc.assert(
      fc.property(
        domainEventArb(),
        fc.uuid(),
        fc.uuid(),
        fc.nat({ max: 1e9 }),
        fc.integer({ min: 1, max: 1e6 }),
        (event, eventId, streamId, position, version) => {
          const encoded = encodeEvent(event);
          // The row as the database hands it back: JSONB columns come back parsed from their JSON text.
          const row = {
            global_position: String(position + 1),
            event_id: eventId,
            stream_id: streamId,
            stream_version: version,
            type: encoded.type,
            schema_version: encoded.schemaVersion,
            data: JSON.parse(JSON.stringify(encoded.data)),
            metadata: JSON.parse(JSON.stringify(encoded.metadata)),
            recorded_at: new Date("2026-02-03T04:05:06.789Z"),
          };
          const decoded = decodeRow(row);
          expect({ type: decoded.type, data: decoded.data }).toStrictEqual(JSON.parse(JSON.stringify(event)));
          expect(decoded).toMatchObject({
            globalPosition: position + 1,
            streamId,
            streamVersion: version,
            eventId,
            recordedAt: "2026-02-03T04:05:06.789Z",
          });
        },
      ),
      { numRuns: 300 },
    );
  });

  it("form logs whose streams start with ContextCreated and have contiguous versions and increasing positions", () => {
    fc.assert(
      fc.property(recordedSequenceArb(), (log) => {
        const versions = new Map<string, number>();
        let last = 0;
        for (const e of log) {
          expect(e.globalPosition).toBeGreaterThan(last);
          last = e.globalPosition;
          const v = (versions.get(e.streamId) ?? 0) + 1;
          expect(e.streamVersion).toBe(v);
          if (v === 1) expect(e.type).toBe("ContextCreated");
          versions.set(e.streamId, v);
          expect(DomainEvent.safeParse({ type: e.type, data: e.data }).success).toBe(true);
        }
      }),
      { numRuns: 100 },
    );
  });
});

describe.each(projections.map((p) => [p.name, p] as const))("the %s fold", (_name, projection) => {
  it("never throws on any valid log, nor on single events in any order", () => {
    fc.assert(
      fc.property(recordedSequenceArb(), (log) => {
        expect(() => foldEvents(projection, log)).not.toThrow();
        expect(() => foldEvents(projection, [...log].reverse())).not.toThrow();
      }),
      { numRuns: 200 },
    );
  });

  it("gives, applied in chunks of random sizes through storage, exactly the state of a rebuild from zero", () => {
    fc.assert(
      fc.property(
        recordedSequenceArb(),
        fc.array(fc.integer({ min: 1, max: 12 }), { minLength: 1, maxLength: 8 }),
        (log, sizes) => {
          const fromZero = asStored(foldEvents(projection, log));
          let stored = new Map<string, unknown>();
          for (const chunk of chunked(log, sizes)) {
            // Each chunk loads the stored states (a JSON round trip) and saves them again, as the engine does.
            const loaded = new Map(asStored(stored).map(({ key, state }) => [key, state]));
            stored = foldEvents(projection, chunk, loaded);
          }
          expect(asStored(stored)).toEqual(fromZero);
        },
      ),
      { numRuns: 150 },
    );
  });

  it("changes nothing when an event is applied twice, or a slice of the log is delivered again", () => {
    fc.assert(
      fc.property(recordedSequenceArb(), fc.nat(), fc.nat(), (log, a, b) => {
        const once = asStored(foldEvents(projection, log));
        const twice = asStored(
          foldEvents(
            projection,
            log.flatMap((e) => [e, e]),
          ),
        );
        expect(twice).toEqual(once);
        const [from, to] = [a % (log.length + 1), b % (log.length + 1)].sort((x, y) => x - y) as [number, number];
        const again = asStored(foldEvents(projection, log.slice(from, to), foldEvents(projection, log)));
        expect(again).toEqual(once);
      }),
      { numRuns: 150 },
    );
  });

  it("never reads the clock: folding the same log twice gives equal states", () => {
    fc.assert(
      fc.property(recordedSequenceArb(), (log: RecordedEvent[]) => {
        expect(asStored(foldEvents(projection, log))).toEqual(asStored(foldEvents(projection, log)));
      }),
      { numRuns: 30 },
    );
  });
});
