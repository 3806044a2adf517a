// The runtime facade: contexts as actors activated on demand from the log, runs driven by the message loop, all facts on the log.
//
// Requirements:
// - `createRuntime` checks its options and reads its configuration before it touches the log, then
//   catches the projections up and records the runs a crash left unfinished as interrupted.
// - It returns only the `Runtime` interface: the parts below (configuration, registry, commands, runs,
//   recovery, delegation) stay internal.
// - Every public method refuses bad input with a RuntimeError naming the field, before anything is written.
// - `events()` returns everything asked for; `eventsPage()` one page and where the next starts.
// - `close()` leaves no waiter hanging: a run in flight is recorded as interrupted and its `send` answered
//   so; a `send` on a run parked awaiting approval is rejected as "closed", and the run stays parked in the log.
//   A fresh subordinate whose first run never started gets its ContextCreated first (a SubordinateCalled may name it).
import { fromPromise } from "xstate";
import { hostname } from "node:os";
import { ModelOverride, type RecordedEvent } from "../events/schema.ts";
import { asContextId } from "../events/ids.ts";
import { sharedByProcesses, type Unsubscribe } from "../events/store.ts";
import { contextMachine, type RunActorInput, type RunOutput } from "../actors/contextMachine.ts";
import { isInFlight, parkedRun } from "../actors/contextQueries.ts";
import type { ContextView } from "../projections/contexts.ts";
import type { RunOutcome } from "../projections/runOutcome.ts";
import { openProjections } from "../projections/engine.ts";
import { PROFILE_DEFAULT } from "../profiles/profiles.ts";
import type { CreateContextOptions, EventsPage, EventsQuery, Runtime, RuntimeOptions, SendResult, StartOptions, StartResult } from "./api.ts";
import { checkProfileAndProject, enabledProfiles, loadConfiguration } from "./configuration.ts";
import type { Core } from "./core.ts";
import { deliver, pause, resume, stopContext } from "./commands.ts";
import { approvalTimeoutActor, checkDecision, decide, interruptOrphanedParkedRuns, listApprovals } from "./approvals.ts";
import { answerControlRequest, requestControl } from "./controlRequests.ts";
import { delegatorOf } from "./delegation.ts";
import { RuntimeError } from "./errors.ts";
import { localLeases, sqlLeases } from "./leases.ts";
import { interruptInFlight, recoverInterruptedRuns } from "./recovery.ts";
import { Registry } from "./registry.ts";
import { runActor, stopActor } from "./runs.ts";
import { buildTools } from "./runTools.ts";
import { subscribeLive, type LiveEvent } from "./liveDeltas.ts";
import { forkContext } from "./fork.ts";
import { promptSetupOf, requestPartsOf, type PromptSetup, type RequestParts } from "./requestParts.ts";
import { BudgetLedger } from "./budgetLedger.ts";
import { budgetReport, checkBudget, extendBudget, setBudget } from "./budgets.ts";
import { checkId, checkLimit, checkMessage, checkOptionalString, checkOptions, checkPosition, invalid } from "./validate.ts";

export { RuntimeError } from "./errors.ts";
export { DEFAULT_LIMITS } from "./api.ts";
export type { Limits, RuntimeOptions, CreateContextOptions, SendResult, StartResult, Runtime, EventsPage, EventsQuery } from "./api.ts";

const TRACEPARENT = /^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;

/** A message's origin, checked: a known protocol, a well-formed W3C traceparent. */
const checkOrigin = (opts: StartOptions): { via?: "mcp" | "a2a"; traceparent?: string; messageId?: string } => {
  const o = checkOptions(opts, "options");
  if (o.via !== undefined && o.via !== "mcp" && o.via !== "a2a") throw invalid("via", '"mcp" or "a2a"', JSON.stringify(o.via));
  if (o.traceparent !== undefined && (typeof o.traceparent !== "string" || !TRACEPARENT.test(o.traceparent))) {
    throw invalid("traceparent", "a W3C traceparent (00-<32 hex>-<16 hex>-<2 hex>)", JSON.stringify(o.traceparent));
  }
  const messageId = checkOptionalString("messageId", o.messageId);
  return { ...(o.via ? { via: o.via } : {}), ...(o.traceparent ? { traceparent: o.traceparent } : {}), ...(messageId ? { messageId } : {}) };
};

/** Runs a gone process left unfinished are recorded as interrupted, and so are parked runs whose caller that ended. */
const recover = async (core: Core): Promise<void> => {
  await recoverInterruptedRuns(core);
  await interruptOrphanedParkedRuns(core);
};

/** Opens the runtime's parts on a store; the sweeper takes over runs of dead processes on a shared log. */
const openCore = async (
  options: RuntimeOptions,
): Promise<{ core: Core; sweeper: NodeJS.Timeout | null; stopAnswering: () => void; stopObserving: () => void }> => {
  // Configuration first: a bad folder is refused before the log is touched.
  const config = loadConfiguration(options);
  const projections = await openProjections(options.store);
  const owner = options.owner ?? `${hostname()}:${process.pid}:${config.clock.uuid().slice(0, 8)}`;
  // A PGlite data dir belongs to one process (its lock sees to that): no other runtime can hold a lease.
  const shared = sharedByProcesses(options.store);
  const leases = shared ? await sqlLeases(options.store.sql, { owner, ttlMs: config.limits.leaseTtlMs, exclusive: false }) : localLeases(owner);
  const registry = new Registry();
  const store = options.store;
  // Spans and live deltas follow the facts this runtime appends, through the store's append hook.
  const stopObserving = config.observer.observe(store);
  const core: Core = { config, store, projections, leases, registry, tools: null as never, closed: false, budgets: new BudgetLedger(store) };
  registry.core = core;
  config.observer.subject = (id) => registry.active.get(id)?.view;
  registry.machine = contextMachine.provide({
    actors: {
      run: fromPromise<RunOutput, RunActorInput>(({ input, signal }) => runActor(core, input, signal)),
      stopRun: fromPromise<RunOutput, RunActorInput>(({ input }) => stopActor(core, input)),
      approvalTimeout: fromPromise<void, RunActorInput>(({ input, signal }) => approvalTimeoutActor(core, input, signal)),
    },
    actions: { "run.ended": ({ context }) => registry.runEnded(context), "run.parked": ({ context }) => registry.runParked(context) },
  });
  core.tools = buildTools(delegatorOf(core), config);
  await recover(core);
  // On a shared log, one subscription (each reads the log on its own) for what other processes append:
  // requests for runs this one drives, and facts of runs parked here and decided there (`followLog`).
  const stopAnswering = shared
    ? core.store.subscribe(
        await core.store.headPosition(),
        (e) => {
          answerControlRequest(core, e);
          core.budgets.observe(e);
          core.registry.followLog(e);
        },
        // This process applied its own appends as they returned: reading them back cost a fresh delegation
        // about four range reads of its 18 events, a sixth of the process's CPU on PostgreSQL.
        { othersOnly: true },
      )
    : () => undefined;
  let sweeper: NodeJS.Timeout | null = null;
  if (shared) {
    // Other processes may die at any time: take over their unfinished runs once their leases expire.
    sweeper = setInterval(() => void recover(core).catch(() => undefined), config.limits.leaseTtlMs);
    sweeper.unref();
  }
  return { core, sweeper, stopAnswering, stopObserving };
};

const checkEventsQuery = (opts: EventsQuery): { after: number; contextId?: string; limit?: number } => {
  const raw = checkOptions(opts, "options");
  const contextId = raw.contextId === undefined ? undefined : checkId("contextId", raw.contextId);
  const limit = checkLimit(raw.limit);
  return { after: checkPosition("after", raw.after) ?? 0, ...(contextId ? { contextId } : {}), ...(limit !== undefined ? { limit } : {}) };
};

/**
 * Opens a runtime on a store.
 * @example
 * const rt = await createRuntime({ store: await openPgliteStore(), model: scriptedModel(() => ({ text: "hi" })) });
 */
export const createRuntime = async (options: RuntimeOptions): Promise<Runtime> => {
  const { core, sweeper, stopAnswering, stopObserving } = await openCore(options);
  const { store, projections, registry } = core;
  const assertOpen = () => {
    if (core.closed) throw new RuntimeError("closed", "The runtime is closed.");
  };
  const catchUp = () => projections.catchUp();

  const rt: Runtime = {
    store,
    projections,

    async createContext(input: CreateContextOptions = {}): Promise<ContextView> {
      assertOpen();
      const raw = checkOptions(input, "options");
      const name = checkOptionalString("name", raw.name)?.trim() || "A0";
      const requested = checkOptionalString("profile", raw.profile)?.trim();
      const project = checkOptionalString("project", raw.project) ?? null;
      const modelOverride = raw.modelOverride ?? null;
      if (modelOverride !== null && !ModelOverride.safeParse(modelOverride).success) {
        throw invalid("modelOverride", "a preset name or { model, baseURL? }", JSON.stringify(modelOverride) ?? String(modelOverride));
      }
      const profile = requested || PROFILE_DEFAULT;
      checkProfileAndProject(core.config, profile, project);
      if (core.config.profiles.get(profile)?.remote) {
        throw new RuntimeError("invalid", `Agent profile '${profile}' is a remote agent: it is reached by call_subordinate, not as a root.`, { field: "profile", expected: "a local profile" });
      }
      const budget =
        raw.budget !== undefined ? checkBudget("budget", raw.budget) : ((project ? core.config.options.projects?.[project]?.budget : undefined) ?? core.config.profiles.get(profile)?.budget);
      const id = asContextId(core.config.clock.uuid());
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
          },
        },
      ]);
      core.budgets.fresh(id);
      if (budget) await setBudget(core, id, budget, "absolute");
      // The view is the fold of the fact just recorded, and the actor is up for the first message:
      // no projection catch-up and no read on the command path.
      return structuredClone((await registry.activateNew(id, created)).view);
    },

    fork: (id, opts) => (assertOpen(), forkContext(core, id, opts)),

    profiles: () =>
      // A remote profile is another agent's: this one does not offer it as its own (an MCP tool, an A2A skill).
      enabledProfiles(core.config, null).filter((key) => !core.config.profiles.get(key)?.remote).map((key) => {
        const p = core.config.profiles.get(key)!;
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
      if (budget) await setBudget(core, ac.view.rootContextId, budget, "relative");
      const { runId, intervention, ended } = await ac.serialize(() => deliver(core, ac, text, origin));
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
      return (await stopContext(core, cid, "user")) ?? (await requestControl(core, cid, "stop"))?.outcome ?? (await stopContext(core, cid, "user"));
    },
    async pause(id: string): Promise<void> {
      assertOpen();
      const cid = checkId("id", id);
      if (!(await requestControl(core, cid, "pause"))) await pause(core, cid);
    },
    async resume(id: string): Promise<void> {
      assertOpen();
      const cid = checkId("id", id);
      if (!(await requestControl(core, cid, "resume"))) await resume(core, cid);
    },

    async budget(rootId) {
      assertOpen();
      return budgetReport(core, checkId("rootId", rootId));
    },
    async extendBudget(rootId, more) {
      assertOpen();
      const id = checkId("rootId", rootId);
      const limits = checkBudget("more", more);
      await catchUp();
      const view = await projections.contexts.get(id);
      if (!view || view.rootContextId !== id) throw new RuntimeError("not_found", `Context '${id}' is not the root of a tree.`);
      await extendBudget(core, id, limits);
    },

    async approvals(opts = {}) {
      assertOpen();
      const contextId = checkOptions(opts, "options").contextId;
      return listApprovals(core, contextId === undefined ? undefined : checkId("contextId", contextId));
    },
    async approve(id, opts) {
      assertOpen();
      const { id: approvalId, decision } = checkDecision(id, opts, true);
      await decide(core, approvalId, decision);
    },
    async reject(id, opts) {
      assertOpen();
      const { id: approvalId, decision } = checkDecision(id, opts, false);
      await decide(core, approvalId, decision);
    },

    async context(id) {
      checkId("id", id);
      await catchUp();
      return projections.contexts.get(id);
    },
    async contexts(filter) {
      await catchUp();
      return projections.contexts.list(filter);
    },
    async children(id) {
      checkId("id", id);
      await catchUp();
      const kids = await projections.tree.children(id);
      const views = await Promise.all(kids.map((k) => projections.contexts.get(k.contextId)));
      return views.filter((v): v is ContextView => v !== null);
    },
    async history(id, options) {
      checkId("id", id);
      const full = checkOptions(options, "options").full;
      if (full !== undefined && typeof full !== "boolean") throw invalid("full", "true or false", JSON.stringify(full));
      await catchUp();
      return projections.transcript.history(id, full ? { full } : {});
    },
    async usage(id) {
      checkId("id", id);
      await catchUp();
      const own = await projections.usage.of(id);
      const view = await projections.contexts.get(id);
      const rollup = view && view.rootContextId === id ? await projections.usage.rollup(id) : null;
      return { own, rollup };
    },

    /** The log itself: everything asked for (all pages of it), never a silently cut first page. */
    async events(opts: EventsQuery = {}): Promise<RecordedEvent[]> {
      const q = checkEventsQuery(opts);
      if (q.contextId) {
        const all = await store.readStream(q.contextId);
        return all.filter((e) => e.globalPosition > q.after).slice(0, q.limit ?? Infinity);
      }
      const out: RecordedEvent[] = [];
      for await (const e of store.iterateAll(q.after)) {
        out.push(e);
        if (q.limit !== undefined && out.length >= q.limit) break;
      }
      return out;
    },

    async eventsPage(opts: EventsQuery = {}): Promise<EventsPage> {
      const q = checkEventsQuery(opts);
      const limit = q.limit ?? 1000;
      // One more than asked says whether a next page exists without a second read.
      const rows = q.contextId
        ? (await store.readStream(q.contextId)).filter((e) => e.globalPosition > q.after).slice(0, limit + 1)
        : await store.readAll(q.after, limit + 1);
      const events = rows.slice(0, limit);
      return { events, next: rows.length > limit ? events.at(-1)!.globalPosition : null };
    },

    // One body for both overloads: a listener that did not ask for deltas never gets one.
    async subscribe(listener: (e: never) => void, opts: { after?: number; deltas?: boolean } = {}): Promise<Unsubscribe> {
      if (typeof listener !== "function") throw invalid("listener", "a function", typeof listener);
      const after = checkPosition("after", checkOptions(opts, "options").after) ?? (await store.headPosition());
      return subscribeLive(store, core.config.deltas, after, listener as (e: LiveEvent) => void, checkOptions(opts, "options").deltas === true);
    },

    actor(id: string) {
      checkId("id", id);
      return registry.active.get(id)?.actor;
    },

    async close(): Promise<void> {
      if (core.closed) return;
      core.closed = true;
      if (sweeper) clearInterval(sweeper);
      stopAnswering();
      const actives = [...registry.active.values()];
      // What the machines say before they stop: which runs are in flight, which ended unrecorded, which are parked.
      // A parked run is not in flight: it stays parked on the log, for this or another process to go on with.
      const atClose = actives.map((ac) => {
        const s = ac.actor.getSnapshot();
        return { ac, inFlight: isInFlight(s), unrecorded: s.context.unrecorded, parked: parkedRun(s) };
      });
      // A fresh child whose run never started is not on the log yet, though its caller's SubordinateCalled may name it.
      await Promise.all(actives.map((ac) => registry.recordOpening(ac.id).catch(() => undefined)));
      // Stopping the roots stops every actor below them, which aborts every run in flight.
      for (const ac of actives) {
        if (ac.passivateTimer) clearTimeout(ac.passivateTimer);
        if (ac.view.depth === 0 || !registry.active.has(ac.view.parentContextId ?? "")) ac.actor.stop();
      }
      await interruptInFlight(atClose);
      // Then every waiter not answered by that (a parked run's, which stays parked in the log) is failed, so none hangs.
      for (const { ac, parked } of atClose) ac.failUnanswered(parked);
      registry.active.clear();
      await core.leases.close();
      await core.tools.close();
      await projections.catchUp();
      stopObserving();
    },
  };
  // Only the interface's members: an embedder cannot reach (or come to depend on) the parts behind it.
  // The one door behind it is a map not exported from the package, for this repository's own tests.
  INTERNALS.set(rt, {
    active: registry.active,
    recoverInterruptedRuns: () => recover(core),
    requestParts: (view: ContextView) => requestPartsOf(core, view),
    promptSetup: () => promptSetupOf(core),
  });
  return Object.freeze(rt);
};

type Internals = {
  active: Core["registry"]["active"];
  recoverInterruptedRuns(): Promise<void>;
  /** What a context's requests hold besides its transcript (fixtures rebuild requests from the log with it). */
  requestParts(view: ContextView): Promise<RequestParts>;
  promptSetup(): PromptSetup;
};

const INTERNALS = new WeakMap<Runtime, Internals>();

/** For this package's own parts and tests (not exported by the package): the live actors, a sweep on demand, request parts. */
export const internalsOf = (rt: Runtime): Internals => {
  const internals = INTERNALS.get(rt);
  if (!internals) throw new Error("not a runtime made by createRuntime");
  return internals;
};
