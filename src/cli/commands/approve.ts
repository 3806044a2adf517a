// `actorzero approve <approval> [--note]` and `actorzero reject <approval> --reason`: a person's decision on a
// tool call that waits for one.
// Requirements: recorded in the log (ApprovalGranted / ApprovalDenied) by the process that can write the context: on a
// data dir actorzero run, send or serve holds, through that process (its control socket), where the parked run goes
// on; otherwise here, where it goes on until it ends (or parks again). `--by` defaults to the OS user; through a
// holder the decision is recorded under the holder's OS user (the socket is 0600: only that user, or root, reaches
// it), so --by is refused there rather than ignored. A decision for
// an unknown approval, one already decided or one whose run ended is refused with the reason (exit 1), nothing written.
import { userInfo } from "node:os";
import { waitFor } from "xstate";
import { z } from "zod";
import type { EventStore } from "../../events/store.ts";
import { loadConfig } from "../config.ts";
import type { Io } from "../context.ts";
import { CliError, EXIT, usageError } from "../errors.ts";
import { JSON_OPTION, positionals, STORE_OPTIONS, StoreFlags, type CommandSpec } from "../flags.ts";
import { holderRefused, openLogOrHolder, type Holder } from "../holder.ts";
import { chooseModel } from "../modelChoice.ts";
import { locate } from "../openLog.ts";
import { runtimeFor } from "../runtimeFor.ts";

type Action = "approve" | "reject";

const valuesOf = (action: Action) =>
  StoreFlags.extend({
    positionals: positionals(action, [{ name: "<approval>" }]),
    by: z
      .string()
      .refine((s) => s.trim() !== "", { message: "--by needs a name" })
      .refine((s) => s.length <= 100, { message: "--by takes a name of at most 100 characters" })
      .optional(),
    note: z.string().optional(),
    reason: z.string().optional(),
    json: z.boolean().optional(),
  });
type Values = z.infer<ReturnType<typeof valuesOf>>;

const osUser = (env: NodeJS.ProcessEnv): string => {
  try {
    return userInfo().username;
  } catch {
    return env.USER ?? env.USERNAME ?? "unknown";
  }
};

const specOf = (action: Action): CommandSpec<Values> => ({
  name: action,
  summary:
    action === "approve"
      ? "Approve a tool call waiting for a decision: it runs, and its parked run goes on."
      : "Reject a tool call waiting for a decision: the model gets --reason as the call's error, and the run goes on.",
  usage: [
    action === "approve"
      ? "approve <approval> [--note <text>] [--by <name>] [--json]"
      : "reject <approval> --reason <text> [--by <name>] [--json]",
  ],
  options: {
    ...STORE_OPTIONS,
    by: {
      type: "string",
      value: "<name>",
      description:
        "who decides, as recorded (default: the OS user; at most 100 characters); not with a holder, which records its own OS user",
    },
    ...(action === "approve"
      ? { note: { type: "string", value: "<text>", description: "a note recorded with the approval" } }
      : { reason: { type: "string", value: "<text>", description: "why (required): the model reads it" } }),
    ...JSON_OPTION,
  },
  details: `<approval> is an approval id as actorzero approvals lists it, or a prefix only one pending approval has. A decision is used once: a second one, one for an
unknown approval, or one whose run was stopped or ended is refused, and nothing is written.
On a data dir that actorzero run, send or serve holds, the decision goes to that process (its control socket).
--json: { approvalId, status }.`,
  schema: valuesOf(action) as z.ZodType<Values>,
});

export const approveSpec = specOf("approve");
export const rejectSpec = specOf("reject");

const decideWith =
  (action: Action) =>
  async (v: Values, io: Io): Promise<number> => {
    const where = locate(v, action);
    const arg = v.positionals["<approval>"]!.trim().toLowerCase();
    if (action === "reject" && (v.reason ?? "").trim() === "")
      throw usageError("reject needs --reason <text>: the model reads it as the call's error", "reject");
    let by = v.by ?? osUser(io.env);
    const body =
      action === "approve" ? { by, ...(v.note !== undefined ? { note: v.note } : {}) } : { by, reason: v.reason ?? "" };
    const opened = await openLogOrHolder(where, { create: false });
    let id = arg;
    if (opened.holder) {
      if (v.by !== undefined) {
        throw new CliError(
          `--by: this data dir is held by a running process, which records the decision under its own OS user; leave --by out`,
        );
      }
      id = approvalNamed(await holderPending(opened.holder), arg);
      by = await through(opened.holder, action, id, body);
    } else await here(opened.store, action, arg, body, io, (ids) => (id = approvalNamed(ids, arg)));
    const status = action === "approve" ? "granted" : "denied";
    if (v.json) io.print(JSON.stringify({ approvalId: id, status }));
    else
      io.print(
        `approval ${id} ${status} by ${by}${action === "approve" ? ": the call runs and its run goes on" : ": the model gets the reason and the run goes on"}`,
      );
    return EXIT.ok;
  };

export const approveCommand = decideWith("approve");
export const rejectCommand = decideWith("reject");

type Body = { by: string; note?: string } | { by: string; reason: string };

const here = async (
  store: EventStore,
  action: Action,
  arg: string,
  body: Body,
  io: Io,
  resolve: (pending: string[]) => string,
): Promise<void> => {
  try {
    const config = loadConfig(io.cwd);
    const rt = await runtimeFor(store, config, await chooseModel({}, config, io.env));
    try {
      const id = resolve((await rt.approvals()).map((a) => a.approvalId));
      const context = await decided(rt, action, id, body);
      // The parked run goes on in this process: wait until it ends (or parks again) before closing.
      const actor = context === null ? undefined : rt.actor(context);
      if (actor)
        await waitFor(actor, (s) => !s.matches({ running: "active" }) && !s.matches({ running: "stopping" }), {
          timeout: Infinity,
        });
    } finally {
      await rt.close();
    }
  } finally {
    await store.close();
  }
};

const decided = async (
  rt: Awaited<ReturnType<typeof runtimeFor>>,
  action: Action,
  id: string,
  body: Body,
): Promise<string | null> => {
  const pending = (await rt.approvals()).find((a) => a.approvalId === id);
  if (action === "approve") await rt.approve(id, body as { by: string; note?: string });
  else await rt.reject(id, body as { by: string; reason: string });
  return pending?.contextId ?? null;
};

/** The holder records the decision under its OS user (no name travels in the body); answers that name. */
const through = async (holder: Holder, action: Action, id: string, body: Body): Promise<string> => {
  const { by: _by, ...rest } = body;
  const answer = await holder.call("POST", `/v1/approvals/${encodeURIComponent(id)}/${action}`, rest);
  if (answer.status !== 200) throw holderRefused(answer);
  return String(answer.body.by);
};

const holderPending = async (holder: Holder): Promise<string[]> => {
  const answer = await holder.call("GET", "/v1/approvals");
  if (answer.status !== 200) throw holderRefused(answer);
  return (answer.body.approvals as { approvalId: string }[]).map((a) => a.approvalId);
};

/**
 * The approval `arg` names: a whole id as given (the runtime says what is wrong with it, if anything), or a
 * prefix that exactly one pending approval has, as `approvals` shows them on a narrow terminal.
 */
export const approvalNamed = (pending: readonly string[], arg: string): string => {
  if (arg.length === 36) return arg;
  if (!/^[0-9a-f-]+$/.test(arg)) throw new CliError(`'${arg}' is not an approval id (see actorzero approvals)`);
  const matches = pending.filter((id) => id.startsWith(arg));
  if (matches.length === 1) return matches[0]!;
  if (matches.length === 0) throw new CliError(`no pending approval starts with '${arg}' (see actorzero approvals)`);
  throw new CliError(
    `'${arg}' could be any of ${matches.length} pending approvals (${matches.map((m) => m.slice(0, 13)).join(", ")}): give more of the id`,
  );
};
