// fast-check arbitrary for JSON values as the log stores them (tool arguments, free-form data).
import fc from "fast-check";

/** A JSON value that survives a JSONB round trip unchanged (no -0, no NaN, no NUL, no `__proto__` keys). */
export const jsonValueArb: fc.Arbitrary<unknown> = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: "small", maxDepth: 3 },
    fc.constant(null),
    fc.boolean(),
    fc.integer({ min: -1_000_000, max: 1_000_000 }),
    fc.integer({ min: -1000, max: 1000 }).map((n) => n / 8 || 0),
    fc.string({ maxLength: 12 }),
    fc.array(tie("value"), { maxLength: 3 }),
    fc.dictionary(fc.constantFrom("a", "b", "path", "query", "n", "x y"), tie("value"), { maxKeys: 3 }),
  ),
})).value;
