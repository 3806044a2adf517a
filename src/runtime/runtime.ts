// The runtime facade: contexts as actors activated on demand from the log, runs driven by the message loop, all facts on the log.
//
// Requirements:
// - `createRuntime` opens the runtime's parts (assembly.ts: configuration before the log, then recovery).
// - It returns only the `Runtime` interface: the parts behind it (configuration, registry, commands, runs,
//   recovery, delegation) stay internal.
// - Every public method refuses bad input with a RuntimeError naming the field, before anything is written;
//   the read side is queries.ts.
// - `close()` takes the parts down once (assembly.ts `closeParts`: no waiter is left hanging); a second close does nothing.
import { ModelOverride } from "../events/schema.ts";
import { asContextId } from "../events/ids.ts";
import type { ContextView } from "../projections/contexts.ts";
import type { RunOutcome } from "../projections/runOutcome.ts";
import { PROFILE_DEFAULT } from "../profiles/profiles.ts";
import type { CreateContextOptions, Runtime, RuntimeOptions, SendResult, StartOptions, StartResult } from "./api.ts";
import { closeParts, openParts } from "./assembly.ts";
import { checkProfileAndProject, enabledProfiles } from "./configuration.ts";
import { checkDecision } from "./approvals.ts";
import { forkContext } from "./fork.ts";
import { readQueries } from "./queries.ts";
import type { Registry } from "./registry.ts";
import type { Projections } from "../projections/engine.ts";
import { promptSetupOf, requestPartsOf, type PromptSetup, type RequestParts } from "./requestParts.ts";
import { budgetReport, checkBudget, extendBudget, setBudget } from "./budgets.ts";
import { RuntimeError } from "./errors.ts";
import { checkId, checkMessage, checkOptionalString, checkOptions, invalid } from "./validate.ts";

export { RuntimeError } from "./errors.ts";
export { DEFAULT_LIMITS } from "./api.ts";
export type {
  Limits,
  RuntimeOptions,
  CreateContextOptions,
  SendResult,
  StartResult,
  Runtime,
  EventsPage,
  EventsQuery,
  RunQuery,
  VerifyOptions,
} from "./api.ts";

const TRACEPARENT = /^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;

/** A message's origin, checked: a known protocol, a well-formed W3C traceparent. */
const checkOrigin = (opts: StartOptions): { via?: "mcp" | "a2a"; traceparent?: string; messageId?: string } => {
  const o = checkOptions(opts, "options");
  if (o.via !== undefined && o.via !== "mcp" && o.via !== "a2a")
    throw invalid("via", '"mcp" or "a2a"', JSON.stringify(o.via));
  if (o.traceparent !== undefined && (typeof o.traceparent !== "string" || !TRACEPARENT.test(o.traceparent))) {
    throw invalid("traceparent", "a W3C traceparent (00-<32 hex>-<16 hex>-<2 hex>)", JSON.stringify(o.traceparent));
  }
  const messageId = checkOptionalString("messageId", o.messageId);
  return {
    ...(o.via ? { via: o.via } : {}),
    ...(o.traceparent ? { traceparent: o.traceparent } : {}),
    ...(messageId ? { messageId } : {}),
  };
};

/**
 * Opens a runtime on a store.
 * @example
 * const rt = await createRuntime({ store: await openPgliteStore(), model: scriptedModel(() => ({ text: "hi" })) });
 */
export const createRuntime = async (options: RuntimeOptions): Promise<Runtime> => {
  const parts = await openParts(options);
  const { store, projections, registry, config, commands, approvals, control } = parts;
  const assertOpen = () => parts.lifecycle.assertOpen();

  const rt: Runtime = {
    ...readQueries({ store, projections, config }),

    async createContext(input: CreateContextOptions = {}): Promise<ContextView> {
      assertOpen();
      const raw = checkOptions(input, "options");
      const name = checkOptionalString("name", raw.name)?.trim() || "A0";
      const requested = checkOptionalString("profile", raw.profile)?.trim();
      const project = checkOptionalString("project", raw.project) ?? null;
      const modelOverride = raw.modelOverride ?? null;
      if (modelOverride !== null && !ModelOverride.safeParse(modelOverride).success) {
        throw invalid(
          "modelOverride",
          "a preset name or { model, baseURL? }",
          JSON.stringify(modelOverride) ?? String(modelOverride),
        );
      }
      const profile = requested || PROFILE_DEFAULT;
      checkProfileAndProject(config, profile, project);
      if (config.profiles.get(profile)?.remote) {
        throw new RuntimeError(
          "invalid",
          `Agent profile '${profile}' is a remote agent: it is reached by call_subordinate, not as a root.`,
          { field: "profile", expected: "a local profile" },
        );
      }
      const budget =
        raw.budget !== undefined
          ? checkBudget("budget", raw.budget)
          : ((project ? config.options.projects?.[project]?.budget : undefined) ??
            config.profiles.get(profile)?.budget);
      const id = asContextId(config.clock.uuid());
      const created = await registry.appendNew(id, [
        {
          type: "ContextCreated",
          data: {
            contextId: id,
            name,
            label: name,
            profile,
            project,
            agentNumber: 0,
            depth: 0,
            kind: "root",
            parentContextId: null,
            parentAgentNumber: null,
            rootContextId: id,
            slot: null,
            modelOverride: modelOverride as ModelOverride | null,
            // The tree's first limits ride on its root's creation: no append of their own.
            ...(budget ? { budget } : {}),
          },
        },
      ]);
      parts.budgets.fresh(id, created[0]!);
      // The view is the fold of the fact just recorded, and the actor is up for the first message:
      // no projection catch-up and no read on the command path.
      return structuredClone((await registry.activateNew(id, created)).view);
    },

    fork: (id, opts) => (assertOpen(), forkContext(parts, id, opts)),

    profiles: () =>
      // A remote profile is another agent's: this one does not offer it as its own (an MCP tool, an A2A skill).
      enabledProfiles(config, null)
        .filter((key) => !config.profiles.get(key)?.remote)
        .map((key) => {
          const p = config.profiles.get(key)!;
          return { key, title: p.title, description: p.description, context: p.context };
        }),

    async send(id: string, text: string, opts?: StartOptions): Promise<SendResult> {
      return (await rt.start(id, text, opts)).ended;
    },

    async start(id: string, text: string, opts: StartOptions = {}): Promise<StartResult> {
      assertOpen();
      checkId("id", id);
      checkMessage(text);
      const origin = checkOrigin(opts);
      const budget = opts.budget === undefined ? undefined : checkBudget("budget", opts.budget);
      const ac = await registry.activate(id);
      // The message's budget is the tree's from now on: recorded before the message, so its first call draws on it.
      if (budget) await setBudget(parts, ac.view.rootContextId, budget);
      const { runId, intervention, ended } = await ac.serialize(() => commands.deliver(ac, text, origin));
      const settled = ended.then(async (outcome) => {
        // Settle once the run's lease is free, so another process may drive the context at once.
        await ac.leaseReleased;
        return { ...outcome, contextId: id };
      });
      // A close rejects it when the run is left parked: a caller that let `ended` go must not get an unhandled rejection.
      settled.catch(() => undefined);
      return { contextId: id, runId, intervention, ended: settled };
    },

    async stop(id: string): Promise<RunOutcome | null> {
      assertOpen();
      const cid = checkId("id", id);
      // A run another process drives is asked of that process, through the log.
      // A run whose owner died is taken over first (resumed, or recorded as interrupted); a resumed one is then stopped here.
      return (
        (await commands.stop(cid, "user")) ??
        (await control.request(cid, "stop"))?.outcome ??
        (await commands.stop(cid, "user"))
      );
    },
    async pause(id: string): Promise<void> {
      assertOpen();
      const cid = checkId("id", id);
      if (!(await control.request(cid, "pause"))) await commands.pause(cid);
    },
    async resume(id: string): Promise<void> {
      assertOpen();
      const cid = checkId("id", id);
      if (!(await control.request(cid, "resume"))) await commands.resume(cid);
    },

    async budget(rootId) {
      assertOpen();
      return budgetReport(parts, checkId("rootId", rootId));
    },
    async extendBudget(rootId, more) {
      assertOpen();
      const id = checkId("rootId", rootId);
      const limits = checkBudget("more", more);
      await projections.catchUp();
      const view = await projections.contexts.get(id);
      if (!view || view.rootContextId !== id)
        throw new RuntimeError("not_found", `Context '${id}' is not the root of a tree.`);
      await extendBudget(parts, id, limits);
    },

    async approvals(opts = {}) {
      assertOpen();
      const contextId = checkOptions(opts, "options").contextId;
      return approvals.list(contextId === undefined ? undefined : checkId("contextId", contextId));
    },
    async approve(id, opts) {
      assertOpen();
      const { id: approvalId, decision } = checkDecision(id, opts, true);
      await approvals.decide(approvalId, decision);
    },
    async reject(id, opts) {
      assertOpen();
      const { id: approvalId, decision } = checkDecision(id, opts, false);
      await approvals.decide(approvalId, decision);
    },

    actor(id: string) {
      checkId("id", id);
      return registry.active.get(id)?.actor;
    },

    async close(): Promise<void> {
      if (parts.lifecycle.closed) return;
      await closeParts(parts);
    },
  };
  // Only the interface's members: an embedder cannot reach (or come to depend on) the parts behind it.
  // The one door behind it is a map not exported from the package, for this repository's own tests.
  INTERNALS.set(rt, {
    active: registry.active,
    projections,
    recoverInterruptedRuns: () => parts.recover(),
    requestParts: (view: ContextView) => requestPartsOf(parts, view),
    promptSetup: () => promptSetupOf(config),
  });
  return Object.freeze(rt);
};

type Internals = {
  active: Registry["active"];
  /** The projection engine (tests compare its rows with a rebuild; embedders use the queries). */
  projections: Projections;
  recoverInterruptedRuns(): Promise<void>;
  /** What a context's requests hold besides its transcript (fixtures rebuild requests from the log with it). */
  requestParts(view: ContextView): Promise<RequestParts>;
  promptSetup(): PromptSetup;
};

const INTERNALS = new WeakMap<Runtime, Internals>();

/**
 * For this package's own parts and tests (not exported by the package): the live actors, the projection engine, a
 * sweep on demand, request parts.
 */
export const internalsOf = (rt: Runtime): Internals => {
  const internals = INTERNALS.get(rt);
  if (!internals) throw new Error("not a runtime made by createRuntime");
  return internals;
};
