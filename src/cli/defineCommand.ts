// A command's spec from one table of flags: each flag's help line and its schema are written once, together,
// and the command's options (for parseArgs and --help) and its values schema (for zod) are both read from it.
import { z } from "zod";
import {
  JSON_OPTION,
  positionals,
  RUN_STORE_OPTIONS,
  RunStoreFlags,
  STORE_OPTIONS,
  StoreFlags,
  type CommandSpec,
  type OptionSpec,
} from "./flags.ts";

/** One flag: how it is parsed and shown (`OptionSpec`) and what its value must be. */
export type Flag<S extends z.ZodType = z.ZodType> = OptionSpec & { schema: S };
export type Flags = Record<string, Flag>;

/** A positional argument, as `positionals` checks it. */
export type Positional = { name: string; optional?: boolean; id?: boolean };

/** The values a table of flags parses to (optional flags are optional keys, as zod infers them). */
export type FlagValues<F extends Flags> = z.output<z.ZodObject<{ [K in keyof F]: F[K]["schema"] }>>;

/** A flag that is on or off. */
export const booleanFlag = (description: string): Flag<z.ZodOptional<z.ZodBoolean>> => ({
  type: "boolean",
  description,
  schema: z.boolean().optional(),
});

/** A flag that takes a non-empty text; `missing` is the error for an empty one. */
export const textFlag = (value: string, description: string, missing: string): Flag<z.ZodOptional<z.ZodString>> => ({
  type: "string",
  value,
  description,
  schema: z.string().min(1, missing).optional(),
});

/** The log a command reads or writes: one that outlives the command (no `memory`). */
export const STORE_FLAGS = {
  "data-dir": { ...STORE_OPTIONS["data-dir"]!, schema: StoreFlags.shape["data-dir"] },
  store: { ...STORE_OPTIONS["store"]!, schema: StoreFlags.shape.store },
};

/** The log of `run`, `serve` and `mcp`: also a log in memory. */
export const RUN_STORE_FLAGS = {
  "data-dir": { ...RUN_STORE_OPTIONS["data-dir"]!, schema: RunStoreFlags.shape["data-dir"] },
  store: { ...RUN_STORE_OPTIONS["store"]!, schema: RunStoreFlags.shape.store },
};

export const JSON_FLAG = { json: { ...JSON_OPTION["json"]!, schema: z.boolean().optional() } };

/** A rule across flags (e.g. one of two is needed): `message` is the usage error when it does not hold. */
type Rule<F extends Flags> = { holds: (v: FlagValues<F>) => boolean; message: string };

/** The positionals: a list `positionals` checks, or a schema over the words (for a command that reads them further). */
type Args = readonly Positional[] | z.ZodType<unknown, string[]>;
type ArgValues<A> =
  A extends z.ZodType<infer P, string[]>
    ? { positionals: P }
    : A extends readonly Positional[]
      ? { positionals: Record<string, string | undefined> }
      : unknown;

type Definition<F extends Flags, A extends Args | undefined> = {
  name: string;
  summary: string;
  /** Usage lines after `actorzero `. */
  usage: string[];
  /** Without them the command takes none (its values have no `positionals`). */
  args?: A;
  /** The flags in the order --help lists them. */
  flags: F;
  rule?: Rule<F>;
  details?: string;
};

/**
 * The spec of a command from its positionals and one table of flags, e.g.
 * `defineCommand({ name: "tree", summary, usage, args: [{ name: "[id]", id: true, optional: true }], flags: { ...STORE_FLAGS, ...JSON_FLAG } })`.
 */
export const defineCommand = <F extends Flags, A extends Args | undefined = undefined>(
  def: Definition<F, A>,
): CommandSpec<FlagValues<F> & ArgValues<A>> => {
  const options = Object.fromEntries(
    Object.entries(def.flags).map(([name, { schema: _schema, ...option }]) => [name, option]),
  );
  // The positionals are checked right after the store flags (before the rest), so the first error named is the same
  // whichever way a command lists its flags.
  const shape: Record<string, z.ZodType> = {};
  const args = def.args;
  const positional =
    args === undefined ? null : Array.isArray(args) ? positionals(def.name, [...args]) : (args as z.ZodType);
  if (positional && !("store" in def.flags)) shape["positionals"] = positional;
  for (const [name, flag] of Object.entries(def.flags)) {
    shape[name] = flag.schema;
    if (positional && name === "store") shape["positionals"] = positional;
  }
  const object = z.object(shape);
  const rule = def.rule;
  const schema = rule ? object.refine((v) => rule.holds(v as FlagValues<F>), { message: rule.message }) : object;
  return {
    name: def.name,
    summary: def.summary,
    usage: def.usage,
    options,
    ...(def.details !== undefined ? { details: def.details } : {}),
    schema: schema as unknown as z.ZodType<FlagValues<F> & ArgValues<A>>,
  };
};

/** The values a spec parses to. */
export type ValuesOf<S> = S extends CommandSpec<infer V> ? V : never;
