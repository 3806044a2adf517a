// What an append hands back as recorded data: the value a JSON round trip gives, with JSONB's key order.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { asJsonb } from "../../src/events/recordedRows.ts";
import { openPgliteStore } from "../../src/events/pgliteStore.ts";

/** The definition asJsonb keeps to, written the slow way: JSON text, parsed, every object's keys sorted as JSONB sorts them. */
const reference = (value: unknown): unknown => {
  const order = (a: string, b: string) => {
    const [x, y] = [Buffer.from(a), Buffer.from(b)];
    return x.length - y.length || Buffer.compare(x, y);
  };
  const sortKeys = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(sortKeys);
    if (v === null || typeof v !== "object") return v;
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(v).sort(order)) {
      const item = sortKeys((v as Record<string, unknown>)[k]);
      if (k === "__proto__")
        Object.defineProperty(out, k, { value: item, enumerable: true, writable: true, configurable: true });
      else out[k] = item;
    }
    return out;
  };
  return sortKeys(JSON.parse(JSON.stringify(value) ?? "null"));
};

/** JSON values plus what JSON.stringify treats specially: undefined, functions, NaN, -0, dates, boxed primitives. */
const jsValue = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: "small" },
    fc.jsonValue({ maxDepth: 2 }),
    fc.constantFrom(
      undefined,
      Number.NaN,
      Number.POSITIVE_INFINITY,
      -0,
      () => 1,
      new Date(0),
      Object(7),
      Object("s"),
      Object(false),
    ),
    fc.array(tie("value"), { maxLength: 4 }),
    fc.dictionary(fc.oneof(fc.string(), fc.constantFrom("__proto__", "é", "zz", "a", "ab")), tie("value"), {
      maxKeys: 5,
    }),
  ),
})).value;

describe("asJsonb", () => {
  it("gives what a JSON round trip gives, each object's keys in JSONB's order (key order included)", () => {
    fc.assert(
      fc.property(jsValue, (value) => {
        const expected = reference(value);
        const actual = asJsonb(value);
        expect(JSON.stringify(actual)).toBe(JSON.stringify(expected));
        expect(actual).toEqual(expected);
      }),
      { numRuns: 2000 },
    );
  });

  it("turns -0 into 0 and leaves the value it was given unchanged", () => {
    const given = { b: -0, a: [undefined, 1], c: undefined };
    expect(Object.is((asJsonb(given) as { b: number }).b, 0)).toBe(true);
    expect(Object.keys(given)).toEqual(["b", "a", "c"]);
    expect(given.a).toEqual([undefined, 1]);
  });

  it("matches what PGlite's JSONB gives back for the same JSON text", async () => {
    const store = await openPgliteStore();
    try {
      const samples = fc
        .sample(fc.jsonValue({ maxDepth: 3 }), 300)
        .filter((v) => !JSON.stringify(v).includes("\\u0000"));
      const { rows } = await store.sql.query<{ v: unknown }>(`SELECT v FROM jsonb_array_elements($1::jsonb) AS x(v)`, [
        JSON.stringify(samples),
      ]);
      expect(rows.map((r) => JSON.stringify(r.v))).toEqual(samples.map((s) => JSON.stringify(asJsonb(s))));
    } finally {
      await store.close();
    }
  });
});
