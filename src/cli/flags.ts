// Command lines parsed with node:util `parseArgs` and validated with zod: typed values or one clear usage error.
import { parseArgs } from "node:util";
import { z } from "zod";
import { usageError } from "./errors.ts";
import { wrapText } from "./screen.ts";

export type OptionSpec = {
  type: "string" | "boolean";
  short?: string;
  /** May be given more than once (the value is then a list). */
  multiple?: boolean;
  /** Shown in help after the flag, e.g. `<dir>`. */
  value?: string;
  description: string;
};

export type CommandSpec<V> = {
  name: string;
  summary: string;
  /** Usage lines after `actorzero `, e.g. `audit <id> [--full] [--json]`. */
  usage: string[];
  /** Extra help text: what the command prints, examples. */
  details?: string;
  options: Record<string, OptionSpec>;
  /** Validates `{ positionals, ...values }` (flags by their long names). */
  schema: z.ZodType<V>;
};

export const HELP_OPTION: Record<string, OptionSpec> = {
  help: { type: "boolean", short: "h", description: "show this help" },
};

export const STORE_OPTIONS: Record<string, OptionSpec> = {
  "data-dir": {
    type: "string",
    value: "<dir>",
    description: "the PGlite data dir holding the log (default ./.actorzero)",
  },
  store: { type: "string", value: "<store>", description: "pglite (default) or a postgres://… URL" },
};

/** `run` and `serve` can use a log in memory: it is gone when the command ends, so no other command would find anything in it. */
export const RUN_STORE_OPTIONS: Record<string, OptionSpec> = {
  ...STORE_OPTIONS,
  store: {
    type: "string",
    value: "<store>",
    description: "pglite (default), memory (kept until the command ends), or a postgres://… URL",
  },
};

export const JSON_OPTION: Record<string, OptionSpec> = {
  json: { type: "boolean", description: "print data as JSON (the shape is documented in docs/cli.md)" },
};

const DATA_DIR = z.string().min(1, "--data-dir needs a directory").optional();

/** The store a command works on, as given on its command line: a log that outlives the command. */
export const StoreFlags = z.object({
  "data-dir": DATA_DIR,
  store: z
    .string()
    .refine((s) => s !== "memory", {
      message:
        "--store memory works only with run and serve: a log in memory is gone when its command ends, so there is nothing here to read; use --data-dir or a postgres://… URL",
    })
    .refine((s) => s === "memory" || s === "pglite" || /^postgres(ql)?:\/\//.test(s), {
      message: "--store must be pglite or a postgres://… URL",
    })
    .optional(),
});

/** The store `run` and `serve` work on: also memory. */
export const RunStoreFlags = z.object({
  "data-dir": DATA_DIR,
  store: z
    .string()
    .refine((s) => s === "pglite" || s === "memory" || /^postgres(ql)?:\/\//.test(s), {
      message: "--store must be pglite, memory, or a postgres://… URL",
    })
    .optional(),
});
export type StoreFlags = z.infer<typeof StoreFlags>;

/** A TCP port: 0 (any free one) to 65535. */
export const portFlag = (flag: string) =>
  z
    .string()
    .regex(/^\d+$/, { message: `${flag} takes a port number from 0 to 65535` })
    .transform(Number)
    .refine((n) => n <= 65_535, { message: `${flag} takes a port number from 0 to 65535` });

/** A whole number ≥ min from a flag's string value. */
export const intFlag = (flag: string, min = 0, what?: string) =>
  z
    .string()
    .regex(/^\d+$/, {
      message: `${flag} takes ${what ? `${what}: ` : ""}${min === 0 ? "a non-negative integer" : `a whole number, ${min} or more`}`,
    })
    .transform(Number)
    .refine((n) => n >= min, { message: `${flag} must be at least ${min}` });

/** A context id, or the start of one. */
export const CONTEXT_ID_PREFIX = /^[0-9a-fA-F-]{1,36}$/;

export type Parsed<V> = { help: true } | { help: false; value: V };

/**
 * Parses `argv` (the words after the command name) against `spec`: unknown flags, missing values
 * and values that fail the schema are usage errors naming the flag.
 */
export const parseCommand = <V>(spec: CommandSpec<V>, argv: readonly string[]): Parsed<V> => {
  const options = Object.fromEntries(
    Object.entries({ ...spec.options, ...HELP_OPTION }).map(([name, o]) => [
      name,
      { type: o.type, ...(o.short ? { short: o.short } : {}), ...(o.multiple ? { multiple: true } : {}) },
    ]),
  );
  let parsed: { values: Record<string, unknown>; positionals: string[] };
  try {
    parsed = parseArgs({
      args: joinDashValues(spec, argv),
      options,
      allowPositionals: true,
      strict: true,
    }) as typeof parsed;
  } catch (e) {
    throw usageError(parseArgsMessage(e), spec.name);
  }
  if (parsed.values["help"] === true) return { help: true };
  const { help: _help, ...values } = parsed.values;
  const result = spec.schema.safeParse({ positionals: parsed.positionals, ...values });
  if (!result.success) {
    const issue = result.error.issues[0]!;
    const flag = issue.path.length === 1 ? String(issue.path[0]) : undefined;
    // A required flag left out: zod would say "expected string, received undefined".
    if (flag !== undefined && Object.hasOwn(spec.options, flag) && values[flag] === undefined) {
      const option = spec.options[flag]!;
      throw usageError(
        `${spec.name} needs --${flag}${option.value ? ` ${option.value}` : ""}: ${option.description}`,
        spec.name,
      );
    }
    throw usageError(issue.message, spec.name);
  }
  // A command whose schema names no positionals takes none: `serve now` must not serve as if `now` were not there.
  const value = result.data as Record<string, unknown>;
  if (!Object.hasOwn(value, "positionals") && parsed.positionals.length > 0) {
    throw usageError(`unexpected argument '${parsed.positionals[0]}' (${spec.name} takes none)`, spec.name);
  }
  return { help: false, value: result.data };
};

/**
 * `--after -5`: parseArgs takes `-5` for an option and calls the value missing; it is the flag's value
 * (a bad one, which the schema then names), so it is passed on as `--after=-5`.
 */
const joinDashValues = (spec: CommandSpec<unknown>, argv: readonly string[]): string[] => {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const word = argv[i]!;
    const next = argv[i + 1];
    if (
      word.startsWith("--") &&
      spec.options[word.slice(2)]?.type === "string" &&
      next !== undefined &&
      /^-\d/.test(next)
    ) {
      out.push(`${word}=${next}`);
      i++;
    } else out.push(word);
  }
  return out;
};

/** parseArgs' messages name the flag but carry advice of their own; ours are shorter. */
const parseArgsMessage = (e: unknown): string => {
  const err = e as { code?: string; message?: string };
  const msg = err.message ?? String(e);
  const flag = /'(-{1,2}[^' ]+)/.exec(msg)?.[1];
  switch (err.code) {
    case "ERR_PARSE_ARGS_UNKNOWN_OPTION":
      return `unknown option ${flag ?? msg}`;
    case "ERR_PARSE_ARGS_INVALID_OPTION_VALUE":
      return flag
        ? `option ${flag.split(" ")[0]} ${msg.includes("argument missing") ? "needs a value" : "takes no value"}`
        : msg;
    default:
      return msg.split("\n")[0]!;
  }
};

/** `actorzero <command> --help`. */
/** The help page; on a terminal (`width` finite) wrapped between words, each description under its own column. */
export const helpText = (spec: CommandSpec<unknown>, width = Infinity): string => {
  const all = { ...spec.options, ...HELP_OPTION };
  const left = Object.entries(all).map(
    ([name, o]) => `${o.short ? `-${o.short}, ` : "    "}--${name}${o.value ? ` ${o.value}` : ""}`,
  );
  const column = Math.max(...left.map((l) => l.length));
  const lines = [
    spec.summary,
    "",
    "Usage:",
    ...spec.usage.map((u) => `  actorzero ${u}`),
    "",
    "Options:",
    ...Object.values(all).map((o, i) =>
      wrapText(`  ${left[i]!.padEnd(column)}  ${o.description}`, width, " ".repeat(column + 4)),
    ),
  ];
  if (spec.details) lines.push("", wrapText(spec.details.trimEnd(), width, ""));
  return lines.map((l) => wrapText(l, width)).join("\n") + "\n";
};

/** A schema for a command's positionals: exactly these names, in order, the optional ones last. */
export const positionals = (command: string, names: { name: string; optional?: boolean; id?: boolean }[]) =>
  z.array(z.string()).transform((list, ctx) => {
    const required = names.filter((n) => !n.optional).length;
    if (list.length < required) {
      ctx.addIssue({ code: "custom", message: `missing ${names[list.length]!.name}` });
      return z.NEVER;
    }
    if (list.length > names.length) {
      ctx.addIssue({
        code: "custom",
        message: `unexpected argument '${list[names.length]}'${names.length === 0 ? ` (${command} takes none)` : ""}`,
      });
      return z.NEVER;
    }
    for (const [i, n] of names.entries()) {
      const value = list[i];
      if (n.id && value !== undefined && !CONTEXT_ID_PREFIX.test(value.trim())) {
        ctx.addIssue({
          code: "custom",
          message: `'${value}' is not a context id (ids look like 1a2b3c4d-…; see actorzero contexts)`,
        });
        return z.NEVER;
      }
    }
    return Object.fromEntries(names.map((n, i) => [n.name, list[i]])) as Record<string, string | undefined>;
  });
