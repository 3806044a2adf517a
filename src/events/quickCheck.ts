// The cheap check of a trusted row on read: the top-level fields of its data have the kinds its schema says.
//
// Requirements:
// - Rows the store wrote were validated on append, so a read does not parse them again with zod
//   (about 10 µs an event, which alone capped a rebuild at half a raw scan); this check costs a
//   fraction of a microsecond and still catches a row written around the store (raw SQL) with a
//   missing field or a field of the wrong kind, as a clear error instead of a crash further on.
// - The kinds come from the zod schemas themselves, so the check cannot drift from them.
// - Nested shapes, string formats and refinements are left to the full parse (`verifyRow`).
import type { z } from "zod";
import { DomainEvent, EventMetadata } from "./schema.ts";

type Kind = "string" | "number" | "boolean" | "object" | "array" | "any";
type Field = { key: string; kind: Kind; nullable: boolean; optional: boolean };

/** What zod 4 says about a schema's outer type (its `_zod.def`). */
type Def = { type: string; innerType?: z.ZodType };

const fieldOf = (key: string, schema: z.ZodType): Field => {
  let nullable = false;
  let optional = false;
  let s = schema;
  for (;;) {
    const def = (s as unknown as { _zod: { def: Def } })._zod.def;
    if (def.type === "nullable" && def.innerType) ((nullable = true), (s = def.innerType));
    else if ((def.type === "optional" || def.type === "default") && def.innerType)
      ((optional = true), (s = def.innerType));
    else {
      const kind: Kind =
        def.type === "string" ||
        def.type === "enum" ||
        (def.type === "literal" && typeof (def as { values?: unknown[] }).values?.[0] === "string")
          ? "string"
          : def.type === "number" || def.type === "int"
            ? "number"
            : def.type === "boolean"
              ? "boolean"
              : def.type === "object" || def.type === "record"
                ? "object"
                : def.type === "array"
                  ? "array"
                  : "any";
      // `unknown` admits undefined and null as well.
      return kind === "any" ? { key, kind, nullable: true, optional: true } : { key, kind, nullable, optional };
    }
  }
};

const fieldsOf = (shape: Record<string, z.ZodType>): Field[] => Object.entries(shape).map(([k, s]) => fieldOf(k, s));

const DATA_FIELDS: ReadonlyMap<string, Field[]> = new Map(
  DomainEvent.options.map((o) => [
    o.shape.type.value,
    fieldsOf((o.shape.data as z.ZodObject).shape as Record<string, z.ZodType>),
  ]),
);
const METADATA_FIELDS = fieldsOf(EventMetadata.shape as Record<string, z.ZodType>);

const kindOf = (v: unknown): Kind => (Array.isArray(v) ? "array" : (typeof v as Kind));

const check = (
  value: unknown,
  fields: readonly Field[],
  path: string,
  issues: { path: string[]; message: string }[],
) => {
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    issues.push({ path: [path], message: `expected an object, received ${value === null ? "null" : kindOf(value)}` });
    return;
  }
  const o = value as Record<string, unknown>;
  for (const f of fields) {
    const v = o[f.key];
    if (v === undefined) {
      if (!f.optional) issues.push({ path: [path, f.key], message: "required, missing" });
    } else if (v === null) {
      if (!f.nullable) issues.push({ path: [path, f.key], message: `expected ${f.kind}, received null` });
    } else if (f.kind !== "any" && kindOf(v) !== f.kind) {
      issues.push({ path: [path, f.key], message: `expected ${f.kind}, received ${kindOf(v)}` });
    }
  }
};

/** The issues of a row of a known `type` at today's version; empty when its fields have the right kinds. */
export const quickCheck = (type: string, data: unknown, metadata: unknown): { path: string[]; message: string }[] => {
  const issues: { path: string[]; message: string }[] = [];
  check(data, DATA_FIELDS.get(type) ?? [], "data", issues);
  check(metadata, METADATA_FIELDS, "metadata", issues);
  return issues;
};
