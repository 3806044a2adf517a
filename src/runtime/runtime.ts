// The runtime: contexts as actors activated on demand from the log, runs driven by the message loop, all facts on the log.
import { createActor, fromPromise, waitFor, type AnyActorRef } from "xstate";
import { Effect } from "effect";
import type { EventStore, Unsubscribe } from "../events/store.ts";
import { ModelOverride, type DomainEvent, type RecordedEvent, type Superior } from "../events/schema.ts";
import { ConcurrencyError } from "../events/errors.ts";
import { asContextId, asRunId, type ContextId, type RunId } from "../events/ids.ts";
import { contextMachine, type ContextMachineInput, type RunActorInput, type RunOutput } from "../actors/contextMachine.ts";
import { messageLoop } from "../actors/messageLoop.ts";
import { RunHandle } from "../actors/runHandle.ts";
import type { ModelPort } from "../models/port.ts";
import { configuredPreset, effectiveModel, type Presets, type Projects } from "../models/presets.ts";
import type { ContextView } from "../projections/contexts.ts";
import { loadProfiles, loadPromptLibrary, PROFILE_DEFAULT, systemPrompt, BUNDLED_PROMPTS_DIR, type Profile, type PromptLibrary } from "../profiles/profiles.ts";
import { join } from "node:path";
import type { Tool, ToolContext } from "../tools/defineTool.ts";
import { ActiveContext, type RunOutcome } from "./activeContext.ts";
import { StreamWriter } from "./streamWriter.ts";
import { systemClock, type Clock } from "./clock.ts";
import { openProjections, type Projections } from "../projections/engine.ts";
import { buildTools, type RuntimeTools } from "./runTools.ts";
import { cancelOpenJobs } from "../tools/parallel.ts";
import { localLeases, sqlLeases, type Leases } from "./leases.ts";
import { RuntimeError } from "./errors.ts";

export { RuntimeError } from "./errors.ts";
import { hostname } from "node:os";
import { DEFAULT_LIMITS, type CreateContextOptions, type EventsPage, type EventsQuery, type Limits, type Runtime, type RuntimeOptions, type SendResult } from "./api.ts";
import { checkFolder, checkId, checkLimit, checkMessage, checkOptionalString, checkOptions, checkPosition, checkPromptsDir, invalid } from "./validate.ts";
import { ConfigError } from "../profiles/profiles.ts";

export { DEFAULT_LIMITS } from "./api.ts";
export type { Limits, RuntimeOptions, CreateContextOptions, SendResult, Runtime, EventsPage, EventsQuery } from "./api.ts";

/** Everything the built-in tools need from the runtime (delegation creates, runs and stops contexts). */
export type RuntimeInternals = {
  readonly clock: Clock;
  readonly limits: Limits;
  readonly profiles: ReadonlyMap<string, Profile>;
  activate(id: string): Promise<ActiveContext>;
  /** Activates a context just created from the events that created it, without reading them back. */
  activateNew(id: string, events: RecordedEvent[]): Promise<ActiveContext>;
  /** Starts a run and resolves once it has started, with a promise of its end (boxed, so awaiting the start never waits for the end). */
  startRun(ac: ActiveContext, text: string, superior: Superior | null): Promise<{ ended: Promise<RunOutcome> }>;
  stopContext(id: string, by: "user" | "superior"): Promise<RunOutcome | null>;
  appendNew(id: ContextId, events: DomainEvent[]): Promise<RecordedEvent[]>;
  enabledProfiles(project: string | null): string[];
  configuredPresetOf(profile: string, project: string | null): string;
};

/** The implementation behind the `Runtime` interface: internal, so its helpers never become API. */
class RuntimeImpl implements Runtime {
  private readonly active = new Map<string, ActiveContext>();
  private readonly activating = new Map<string, Promise<ActiveContext>>();
  private readonly machine;
  private closed = false;
  readonly limits: Limits;
  readonly clock: Clock;
  readonly profiles: Map<string, Profile>;
  private readonly library: PromptLibrary;
  private readonly tools: RuntimeTools;

  private sweeper: NodeJS.Timeout | null = null;

  private constructor(
    private readonly options: RuntimeOptions,
    readonly projections: Projections,
    private readonly leases: Leases,
    config: Configuration,
  ) {
    this.limits = { ...DEFAULT_LIMITS, ...options.limits };
    this.clock = options.clock ?? systemClock;
    this.library = config.library;
    this.profiles = config.profiles;
    this.tools = buildTools(this.internals, this.library, options.tools ?? []);
    this.machine = contextMachine.provide({
      actors: {
        run: fromPromise<RunOutput, RunActorInput>(({ input, signal }) => this.runActor(input, signal)),
        stopRun: fromPromise<RunOutput, RunActorInput>(({ input }) => this.stopActor(input)),
      },
    });
  }

  /** Opens the runtime on a store: catches the projections up and marks runs a crash left unfinished as interrupted. */
  static async create(options: RuntimeOptions): Promise<RuntimeImpl> {
    checkRuntimeOptions(options);
    // Configuration first: a bad folder is refused before the log is touched.
    const config = loadConfiguration(options);
    const projections = await openProjections(options.store);
    const limits = { ...DEFAULT_LIMITS, ...options.limits };
    const owner = options.owner ?? `${hostname()}:${process.pid}:${(options.clock ?? systemClock).uuid().slice(0, 8)}`;
    // A PGlite data dir belongs to one process (its lock sees to that): no other runtime can hold a lease.
    const shared = options.store.kind !== "pglite";
    const leases = shared ? await sqlLeases(options.store.sql, { owner, ttlMs: limits.leaseTtlMs, exclusive: false }) : localLeases(owner);
    const rt = new RuntimeImpl(options, projections, leases, config);
    await rt.recoverInterruptedRuns();
    if (options.store.kind !== "pglite") {
      // Other processes may die at any time: take over their unfinished runs once their leases expire.
      rt.sweeper = setInterval(() => void rt.recoverInterruptedRuns().catch(() => undefined), limits.leaseTtlMs);
      rt.sweeper.unref();
    }
    return rt;
  }

  get store(): EventStore {
    return this.options.store;
  }

  // ---------------------------------------------------------------- public API

  /** Creates a root context (A0). */
  async createContext(input: CreateContextOptions = {}): Promise<ContextView> {
    this.assertOpen();
    const raw = checkOptions(input, "options");
    const opts: CreateContextOptions = {
      ...raw,
      name: checkOptionalString("name", raw.name),
      profile: checkOptionalString("profile", raw.profile),
      project: checkOptionalString("project", raw.project),
    };
    if (raw.modelOverride !== undefined && raw.modelOverride !== null && !ModelOverride.safeParse(raw.modelOverride).success) {
      throw invalid("modelOverride", "a preset name or { model, baseURL? }", JSON.stringify(raw.modelOverride) ?? String(raw.modelOverride));
    }
    const profile = opts.profile && opts.profile.trim() !== "" ? opts.profile.trim() : PROFILE_DEFAULT;
    if (!this.profiles.has(profile)) {
      throw new RuntimeError("invalid", `Agent profile '${profile}' not found. Available profiles: ${[...this.profiles.keys()].sort().join(", ")}.`);
    }
    const id = asContextId(this.clock.uuid());
    const name = opts.name?.trim() || "A0";
    await this.appendNew(id, [
      {
        type: "ContextCreated",
        data: {
          contextId: id,
          name,
          label: name,
          profile,
          project: opts.project ?? null,
          agentNumber: 0,
          depth: 0,
          kind: "root",
          parentContextId: null,
          parentAgentNumber: null,
          rootContextId: id,
          slot: null,
          modelOverride: opts.modelOverride ?? null,
        },
      },
    ]);
    return (await this.context(id))!;
  }

  /**
   * Sends a message. An idle, stopped or failed context starts a run; a running one takes it as an
   * intervention. Resolves when the run that handles the message ends.
   */
  async send(id: string, text: string): Promise<SendResult> {
    this.assertOpen();
    checkId("id", id);
    checkMessage(text);
    const ac = await this.activate(id);
    const { ended } = await ac.serialize(() => this.deliver(ac, text));
    const outcome = await ended;
    // Settle once the run's lease is free, so another process may drive the context at once.
    await ac.leaseReleased;
    return { ...outcome, contextId: id };
  }

  /** Stops the context's run (and its running subordinates, down the tree). Resolves once it is recorded. */
  async stop(id: string): Promise<RunOutcome | null> {
    this.assertOpen();
    checkId("id", id);
    return this.stopContext(id, "user");
  }

  /** A running context waits at its next checkpoint until `resume`, a new message, or `stop`. */
  async pause(id: string): Promise<void> {
    this.assertOpen();
    checkId("id", id);
    const ac = await this.activate(id);
    await ac.serialize(async () => {
      await this.settle(ac);
      if (ac.view.paused) return;
      const runId = ac.actor.getSnapshot().matches("running") ? (ac.run?.runId ?? null) : null;
      await ac.writer.append([{ type: "ContextPaused", data: { runId } }]);
      if (runId) ac.run?.setPaused(true);
    });
  }

  async resume(id: string): Promise<void> {
    this.assertOpen();
    checkId("id", id);
    const ac = await this.activate(id);
    await ac.serialize(async () => {
      if (!ac.view.paused) return;
      const runId = ac.run && !ac.run.terminal ? ac.run.runId : null;
      await ac.writer.append([{ type: "ContextResumed", data: { runId } }]);
      ac.run?.setPaused(false);
    });
  }

  async context(id: string): Promise<ContextView | null> {
    checkId("id", id);
    await this.catchUp();
    return this.projections.contexts.get(id);
  }

  async contexts(filter?: { rootContextId?: string; status?: ContextView["status"] }): Promise<ContextView[]> {
    await this.catchUp();
    return this.projections.contexts.list(filter);
  }

  async children(id: string): Promise<ContextView[]> {
    checkId("id", id);
    await this.catchUp();
    const kids = await this.projections.tree.children(id);
    const views = await Promise.all(kids.map((k) => this.projections.contexts.get(k.contextId)));
    return views.filter((v): v is ContextView => v !== null);
  }

  async history(id: string) {
    checkId("id", id);
    await this.catchUp();
    return this.projections.transcript.history(id);
  }

  async usage(id: string) {
    checkId("id", id);
    await this.catchUp();
    const own = await this.projections.usage.of(id);
    const view = await this.projections.contexts.get(id);
    const rollup = view && view.rootContextId === id ? await this.projections.usage.rollup(id) : null;
    return { own, rollup };
  }

  /** The log itself: everything asked for (all pages of it), never a silently cut first page. */
  async events(opts: EventsQuery = {}): Promise<RecordedEvent[]> {
    const q = checkEventsQuery(opts);
    if (q.contextId) {
      const all = await this.store.readStream(q.contextId);
      return all.filter((e) => e.globalPosition > q.after).slice(0, q.limit ?? Infinity);
    }
    const out: RecordedEvent[] = [];
    for await (const e of this.store.iterateAll(q.after)) {
      out.push(e);
      if (q.limit !== undefined && out.length >= q.limit) break;
    }
    return out;
  }

  /** One page of the log and the `after` of the next one (null once the end is reached). */
  async eventsPage(opts: EventsQuery = {}): Promise<EventsPage> {
    const q = checkEventsQuery(opts);
    const limit = q.limit ?? 1000;
    // One more than asked says whether a next page exists without a second read.
    const rows = q.contextId
      ? (await this.store.readStream(q.contextId)).filter((e) => e.globalPosition > q.after).slice(0, limit + 1)
      : await this.store.readAll(q.after, limit + 1);
    const events = rows.slice(0, limit);
    return { events, next: rows.length > limit ? events.at(-1)!.globalPosition : null };
  }

  /** Every event appended from now on (or after `after`), in log order. */
  async subscribe(listener: (e: RecordedEvent) => void, opts: { after?: number } = {}): Promise<Unsubscribe> {
    if (typeof listener !== "function") throw invalid("listener", "a function", typeof listener);
    checkPosition("after", checkOptions(opts, "options").after);
    const after = opts.after ?? (await this.store.headPosition());
    return this.store.subscribe(after, listener);
  }

  /** The context's actor while it is active (for inspection), else undefined. */
  actor(id: string): AnyActorRef | undefined {
    checkId("id", id);
    return this.active.get(id)?.actor;
  }

  /** Passivates every actor; runs still in flight (and their jobs) are recorded as interrupted. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.sweeper) clearInterval(this.sweeper);
    const actives = [...this.active.values()];
    // Stopping the roots stops every actor below them, which aborts every run in flight.
    for (const ac of actives) {
      if (ac.passivateTimer) clearTimeout(ac.passivateTimer);
      if (ac.view.depth === 0 || !this.active.has(ac.view.parentContextId ?? "")) ac.actor.stop();
    }
    for (const ac of actives) {
      const handle = ac.run;
      if (!handle || handle.terminal) continue;
      await ac.writer.exclusive(async (append) => {
        if (handle.terminal) return;
        const jobs = [...handle.jobs.values()].filter((j) => j.status === "running");
        for (const job of jobs) job.status = "interrupted";
        handle.terminal = await append([
          ...jobs.map((job) => ({
            type: "ParallelJobFinished" as const,
            data: {
              runId: handle.runId,
              jobId: job.jobId,
              status: "interrupted" as const,
              result: null,
              error: "The runtime closed while this job ran.",
              contextId: (job.contextId as ContextId | null) ?? null,
            },
          })),
          { type: "RunInterrupted", data: { runId: handle.runId } },
        ]);
      });
    }
    this.active.clear();
    await this.leases.close();
    await this.projections.catchUp();
  }

  // ---------------------------------------------------------------- internals

  get internals(): RuntimeInternals {
    return {
      clock: this.clock,
      limits: this.limits,
      profiles: this.profiles,
      activate: (id) => this.activate(id),
      activateNew: (id, events) => this.activateNew(id, events),
      startRun: (ac, text, superior) => ac.serialize(() => this.start(ac, text, superior)),
      stopContext: (id, by) => this.stopContext(id, by),
      appendNew: (id, events) => this.appendNew(id, events),
      enabledProfiles: (project) => this.enabledProfiles(project),
      configuredPresetOf: (profile, project) => this.configuredPresetOf(profile, project),
    };
  }

  private assertOpen(): void {
    if (this.closed) throw new RuntimeError("closed", "The runtime is closed.");
  }

  private async catchUp(): Promise<void> {
    await this.projections.catchUp();
  }

  enabledProfiles(project: string | null): string[] {
    const disabled = new Set(project ? (this.options.projects?.[project]?.disabledProfiles ?? []) : []);
    return [...this.profiles.values()].filter((p) => p.enabled && !disabled.has(p.key)).map((p) => p.key);
  }

  configuredPresetOf(profile: string, project: string | null): string {
    return configuredPreset({
      presets: this.options.presets ?? {},
      projects: this.options.projects ?? {},
      profileModelPreset: this.profiles.get(profile)?.modelPreset,
      project,
      profile,
    });
  }

  /** Appends the first events of a new stream. */
  appendNew(id: ContextId, events: DomainEvent[]): Promise<RecordedEvent[]> {
    return new StreamWriter(this.store, id, 0, this.clock, () => undefined).append(events);
  }

  /** Makes a context's actor live, activating its ancestors first (the actor tree mirrors the delegation tree). */
  async activate(id: string): Promise<ActiveContext> {
    this.assertOpen();
    const existing = this.active.get(id);
    if (existing) return this.touch(existing);
    const pending = this.activating.get(id);
    if (pending) return pending;
    const p = this.load(id).finally(() => this.activating.delete(id));
    this.activating.set(id, p);
    return p;
  }

  /** Activates a context whose whole stream the caller holds (one it just created): no read needed. */
  async activateNew(id: string, events: RecordedEvent[]): Promise<ActiveContext> {
    this.assertOpen();
    const existing = this.active.get(id);
    if (existing) return this.touch(existing);
    const p = this.load(id, events).finally(() => this.activating.delete(id));
    this.activating.set(id, p);
    return p;
  }

  private async load(id: string, known?: RecordedEvent[]): Promise<ActiveContext> {
    const events = known ?? (await this.store.readStream(id));
    if (events.length === 0) throw new RuntimeError("not_found", `Context '${id}' was not found.`);
    const ac = new ActiveContext(asContextId(id), events);
    ac.writer = new StreamWriter(this.store, ac.id, ac.view.version, this.clock, (facts) => this.onAppended(ac, facts));
    const input: ContextMachineInput = {
      contextId: ac.id,
      version: ac.view.version,
      status: ac.view.status === "running" ? "failed" : ac.view.status,
      paused: ac.view.paused,
      failure: ac.view.failure,
    };
    if (ac.view.parentContextId) {
      const parent = await this.activate(ac.view.parentContextId);
      parent.actor.send({ type: "child.activate", contextId: ac.id, logic: this.machine, input });
      const ref = parent.actor.getSnapshot().children[ac.id] as AnyActorRef | undefined;
      if (!ref) throw new Error(`actor for context ${id} was not spawned`);
      ac.actor = ref;
    } else {
      ac.actor = createActor(this.machine, { input, id: ac.id, systemId: ac.id });
      ac.actor.start();
    }
    this.active.set(id, ac);
    return this.touch(ac);
  }

  private touch(ac: ActiveContext): ActiveContext {
    if (ac.passivateTimer) {
      clearTimeout(ac.passivateTimer);
      ac.passivateTimer = null;
    }
    return ac;
  }

  private onAppended(ac: ActiveContext, facts: RecordedEvent[]): void {
    ac.apply(facts);
    if (ac.run && facts.some((f) => f.type === "InterventionReceived")) ac.run.interventionReceived();
    if (this.closed) return;
    ac.actor.send({ type: "facts.apply", facts });
    if (facts.some((f) => f.type === "RunCompleted" || f.type === "RunStopped" || f.type === "RunFailed" || f.type === "RunInterrupted")) {
      // Projections are not caught up here: queries catch up on their own, off the runs' path.
      this.schedulePassivation(ac);
      ac.leaseReleased = this.leases.release(ac.id).catch(() => undefined);
    }
  }

  private schedulePassivation(ac: ActiveContext): void {
    if (ac.passivateTimer) clearTimeout(ac.passivateTimer);
    ac.passivateTimer = setTimeout(() => this.passivate(ac), this.limits.passivateAfterMs);
    ac.passivateTimer.unref();
  }

  /** Stops an idle context's actor (not its run: it has none) once none of its children is active. */
  private passivate(ac: ActiveContext): void {
    ac.passivateTimer = null;
    if (this.active.get(ac.id) !== ac) return;
    if (ac.actor.getSnapshot().matches("running")) return;
    const hasActiveChild = Object.keys(ac.actor.getSnapshot().children).some((k) => this.active.has(k));
    if (hasActiveChild) {
      this.schedulePassivation(ac);
      return;
    }
    this.active.delete(ac.id);
    if (ac.view.parentContextId) {
      const parent = this.active.get(ac.view.parentContextId);
      parent?.actor.send({ type: "child.passivate", contextId: ac.id });
    } else {
      ac.actor.stop();
    }
  }

  /** Waits until the actor agrees with the log: not stopping, and not still `running` for a run that has ended. */
  private async settle(ac: ActiveContext): Promise<void> {
    const runEnded = () => !ac.run || ac.run.terminal !== null;
    await waitFor(ac.actor, (s) => !s.matches({ running: "stopping" }) && !(s.matches("running") && runEnded()), { timeout: Infinity });
  }

  /** A message: an intervention for a running context, else a new run. */
  private async deliver(ac: ActiveContext, text: string): Promise<{ ended: Promise<RunOutcome> }> {
    await this.settle(ac);
    if (ac.actor.getSnapshot().matches("running") && ac.run && !ac.run.terminal) {
      const handle = ac.run;
      const delivered = await ac.writer.exclusive(async (append) => {
        if (handle.terminal) return false;
        await append([{ type: "InterventionReceived", data: { runId: handle.runId, text } }], {
          correlationId: handle.correlationId,
        });
        return true;
      });
      if (delivered) return { ended: ac.outcome(handle.runId) };
      await this.settle(ac);
    }
    return this.start(ac, text, null);
  }

  /** Records the message and the run's start, then starts the actor's run. */
  private async start(ac: ActiveContext, text: string, superior: Superior | null): Promise<{ ended: Promise<RunOutcome> }> {
    await this.settle(ac);
    if (ac.actor.getSnapshot().matches("running")) {
      throw new RuntimeError("invalid", `Context '${ac.id}' is still running.`);
    }
    await this.takeLease(ac);
    const runId = asRunId(this.clock.uuid());
    const model = this.modelFor(ac.view);
    const correlationId = superior ? (this.active.get(superior.contextId)?.run?.correlationId ?? superior.runId) : runId;
    const facts = await ac.writer.append(
      [
        { type: "MessageReceived", data: { runId, text, sender: superior ? "superior" : "user" } },
        { type: "RunStarted", data: { runId, model: model.model, superior } },
      ],
      { correlationId, causationId: superior?.toolCallId ?? null },
    );
    ac.run = new RunHandle(ac.id, runId, correlationId);
    const outcome = ac.outcome(runId);
    ac.actor.send({ type: "run.start", facts, runId });
    return { ended: outcome };
  }

  /**
   * Takes the context's run lease (another live process may be driving it), then brings this actor up to
   * the stream, which another process may have extended; a run a dead owner left is recorded as interrupted.
   */
  private async takeLease(ac: ActiveContext): Promise<void> {
    // The last run's release must land first, or it would delete the lease taken here.
    await ac.leaseReleased;
    const lease = await this.leases.acquire(ac.id);
    if (!lease.ok) throw new RuntimeError("busy", `Context '${ac.id}' is running in another process (${lease.owner}).`);
    // Alone on the log (PGlite), nothing can have been appended behind this actor's back.
    if (this.store.kind !== "pglite") {
      const newer = await this.store.readStream(ac.id, ac.view.version + 1);
      if (newer.length > 0) {
        ac.apply(newer);
        ac.writer.resetVersion(ac.view.version);
        ac.actor.send({ type: "facts.apply", facts: newer });
      }
    }
    if (ac.view.status === "running" && (!ac.run || ac.run.terminal)) {
      await this.interrupt(ac.view);
      const closing = await this.store.readStream(ac.id, ac.view.version + 1);
      ac.apply(closing);
      ac.writer.resetVersion(ac.view.version);
      ac.actor.send({ type: "facts.apply", facts: closing });
    }
  }

  private modelFor(view: ContextView) {
    return effectiveModel(view.modelOverride, this.configuredPresetOf(view.profile, view.project), this.options.presets ?? {});
  }

  async stopContext(id: string, by: "user" | "superior"): Promise<RunOutcome | null> {
    const ac = await this.activate(id);
    return ac.serialize(async () => {
      const snapshot = ac.actor.getSnapshot();
      if (!snapshot.matches("running") || !ac.run) return null;
      const handle = ac.run;
      if (!handle.terminal) {
        handle.stopRequestedBy ??= by;
        ac.actor.send({ type: "run.stop" });
      }
      const outcome = await ac.outcome(handle.runId);
      await this.settle(ac);
      return outcome;
    });
  }

  /** The invoked `run` actor: the message loop of the context's current run. */
  private async runActor(input: RunActorInput, signal: AbortSignal): Promise<RunOutput> {
    const ac = this.active.get(input.contextId);
    const handle = ac?.run;
    if (!ac || !handle || handle.runId !== input.runId) throw new Error(`run ${input.runId} has no handle`);
    const view = ac.view;
    const model = this.modelFor(view);
    const profile = this.profiles.get(view.profile);
    const tools = this.tools.forContext(view);
    try {
      const facts = await Effect.runPromise(
        messageLoop({
          handle,
          writer: ac.writer,
          agentNumber: view.agentNumber,
          profile: view.profile,
          model: { name: model.model, ...(model.baseURL ? { baseURL: model.baseURL } : {}) },
          modelPort: this.options.model,
          systemPrompt: systemPrompt(this.library, profile, {
            agentNumber: view.agentNumber,
            superior: view.agentNumber === 0 ? "the user" : `A${view.agentNumber - 1}`,
          }),
          transcript: () => ac.transcript(),
          resolveReference: (toolCallId) => ac.storedResults.get(toolCallId),
          cancelOpenJobs: () => cancelOpenJobs(this.internals, handle),
          tools: tools.byName,
          toolSpecs: tools.specs,
          limits: this.limits,
          toolContext: (toolCallId, sig): ToolContext => ({
            contextId: ac.id,
            runId: handle.runId,
            agentNumber: view.agentNumber,
            profile: view.profile,
            toolCallId,
            signal: sig,
          }),
        }),
        { signal },
      );
      return { facts };
    } catch (e) {
      if (signal.aborted) throw e;
      // A bug or a broken store: record it so the run still ends exactly once.
      const message = e instanceof Error ? e.message : String(e);
      try {
        const facts = await ac.writer.exclusive(async (append) => {
          if (handle.terminal) return handle.terminal;
          handle.terminal = await append([{ type: "RunFailed", data: { runId: handle.runId, reason: "internal", message } }]);
          return handle.terminal;
        });
        return { facts };
      } catch (recordError) {
        // The log refuses this stream (another process ended the run, or the store is gone): the run is
        // over all the same, so its waiters learn it and the context takes the next message.
        handle.terminal ??= [];
        ac.outcomes.get(handle.runId)?.resolve({ runId: handle.runId, status: "failed", response: null, failure: { reason: "internal", message } });
        ac.leaseReleased = this.leases.release(ac.id).catch(() => undefined);
        throw recordError;
      }
    } finally {
      handle.settle();
    }
  }

  /** The invoked `stopRun` actor: stops running subordinates, then records what was aborted and the stop. */
  private async stopActor(input: RunActorInput): Promise<RunOutput> {
    const ac = this.active.get(input.contextId)!;
    const handle = ac.run!;
    // Jobs first, so they end as cancelled rather than as failed when their subordinates stop.
    for (const job of handle.jobs.values()) {
      if (job.status !== "running") continue;
      job.cancelled = true;
      job.abort.abort(new Error("stopped"));
    }
    await Promise.all([...handle.runningChildren].map((child) => this.stopContext(child, "superior").catch(() => null)));
    await handle.settled;
    const facts = await ac.writer.exclusive(async (append) => {
      if (handle.terminal) return handle.terminal;
      const events: DomainEvent[] = [];
      const inFlight = handle.inFlight;
      if (inFlight?.kind === "model") {
        events.push({
          type: "ModelCallFailed",
          data: {
            runId: handle.runId,
            step: inFlight.step,
            attempt: inFlight.attempt,
            reason: "aborted",
            message: "The run was stopped during this model call.",
            retryable: false,
            retryInMs: null,
          },
        });
      } else if (inFlight?.kind === "tool") {
        events.push({
          type: "ToolFailed",
          data: { runId: handle.runId, toolCallId: inFlight.toolCallId, name: inFlight.name, error: "Stopped while running.", repairable: false },
        });
      }
      for (const job of handle.jobs.values()) {
        if (job.status !== "running") continue;
        job.status = "cancelled";
        events.push({
          type: "ParallelJobFinished",
          data: { runId: handle.runId, jobId: job.jobId, status: "cancelled", result: null, error: "The run was stopped.", contextId: (job.contextId as ContextId | null) ?? null },
        });
      }
      events.push({ type: "RunStopped", data: { runId: handle.runId, by: handle.stopRequestedBy ?? "user" } });
      handle.terminal = await append(events, { correlationId: handle.correlationId, causationId: handle.runId });
      return handle.terminal;
    });
    return { facts };
  }

  /** A run with no terminal event whose owner is gone (a crash) is recorded as interrupted: on open, and on PostgreSQL periodically. */
  private async recoverInterruptedRuns(): Promise<void> {
    await this.projections.catchUp();
    const running = await this.projections.contexts.list({ status: "running" });
    const unowned = new Set(await this.leases.unowned(running.map((v) => v.id)));
    for (const view of running) {
      if (!unowned.has(view.id) || this.closed) continue;
      const ac = await this.activate(view.id);
      // In the context's command queue: no run of this process can start on it meanwhile.
      await ac.serialize(async () => {
        if (ac.run && ac.run.terminal === null) return;
        try {
          await this.takeLease(ac);
        } catch (e) {
          if (e instanceof RuntimeError && e.reason === "busy") return;
          throw e;
        }
        await this.leases.release(ac.id);
      });
    }
    await this.projections.catchUp();
  }

  /** Records that the view's current run (and its running jobs) ended unfinished. */
  private async interrupt(view: ContextView): Promise<void> {
    const runId = view.currentRunId;
    if (!runId) return;
    const events: DomainEvent[] = [];
    for (const job of await this.projections.jobs.ofContext(view.id)) {
      if (job.status === "running" || job.status === "pending") {
        events.push({
          type: "ParallelJobFinished",
          data: {
            runId: asRunId(job.runId ?? runId),
            jobId: job.jobId as never,
            status: "interrupted",
            result: null,
            error: "The runtime stopped while this job ran.",
            contextId: job.childContextId as ContextId | null,
          },
        });
      }
    }
    events.push({ type: "RunInterrupted", data: { runId: asRunId(runId) as RunId } });
    const withIds = events.map((e) => ({ ...e, eventId: this.clock.uuid() as never }));
    try {
      await this.store.append(view.id, withIds, { expectedVersion: view.version });
    } catch (e) {
      // Someone else recorded this context's next fact first: it is not ours to close any more.
      if (!(e instanceof ConcurrencyError)) throw e;
    }
  }
}

/**
 * Opens a runtime on a store.
 * @example
 * const rt = await createRuntime({ store: await openPgliteStore(), model: scriptedModel(() => ({ text: "hi" })) });
 */
export const createRuntime = async (options: RuntimeOptions): Promise<Runtime> => facadeOf(await RuntimeImpl.create(options));

/** Only the interface's members, so an embedder cannot reach (or come to depend on) the implementation's helpers. */
const facadeOf = (rt: RuntimeImpl): Runtime =>
  Object.freeze({
    store: rt.store,
    projections: rt.projections,
    createContext: (opts?: CreateContextOptions) => rt.createContext(opts),
    send: (id: string, text: string) => rt.send(id, text),
    stop: (id: string) => rt.stop(id),
    pause: (id: string) => rt.pause(id),
    resume: (id: string) => rt.resume(id),
    context: (id: string) => rt.context(id),
    contexts: (filter?: Parameters<Runtime["contexts"]>[0]) => rt.contexts(filter),
    children: (id: string) => rt.children(id),
    history: (id: string) => rt.history(id),
    usage: (id: string) => rt.usage(id),
    events: (opts?: EventsQuery) => rt.events(opts),
    eventsPage: (opts?: EventsQuery) => rt.eventsPage(opts),
    subscribe: (listener: (e: RecordedEvent) => void, opts?: { after?: number }) => rt.subscribe(listener, opts),
    actor: (id: string) => rt.actor(id),
    close: () => rt.close(),
  });

type Configuration = { library: PromptLibrary; profiles: Map<string, Profile> };

/** The prompt library and profiles, read once at start; a bad folder or profile file is a refusal naming the option. */
const loadConfiguration = (options: RuntimeOptions): Configuration => {
  const promptsDir = options.promptsDir === undefined ? BUNDLED_PROMPTS_DIR : checkPromptsDir(options.promptsDir);
  const extra = options.profiles ?? [];
  if (!Array.isArray(extra)) throw invalid("profiles", "an array of folder paths", typeof extra);
  extra.forEach((dir, i) => checkFolder(`profiles[${i}]`, dir));
  let library: PromptLibrary;
  try {
    library = loadPromptLibrary(promptsDir);
  } catch (e) {
    throw invalid("promptsDir", "a readable prompts folder", (e as Error).message);
  }
  try {
    return { library, profiles: loadProfiles([join(promptsDir, "profiles"), ...extra]) };
  } catch (e) {
    if (e instanceof ConfigError) throw invalid("profiles", "folders of valid profile.json files", e.message);
    throw invalid("profiles", "readable profile folders", (e as Error).message);
  }
};

const checkRuntimeOptions = (options: RuntimeOptions): void => {
  checkOptions(options, "options");
  if (!options || typeof options.store?.append !== "function") throw invalid("store", "an EventStore (openPgliteStore or openPostgresStore)", String(options?.store));
  if (typeof options.model?.call !== "function") throw invalid("model", "a ModelPort (openAIModel or scriptedModel)", String(options.model));
  checkOptionalString("owner", options.owner);
};

const checkEventsQuery = (opts: EventsQuery): { after: number; contextId?: string; limit?: number } => {
  const raw = checkOptions(opts, "options");
  const contextId = raw.contextId === undefined ? undefined : checkId("contextId", raw.contextId);
  const limit = checkLimit(raw.limit);
  return { after: checkPosition("after", raw.after) ?? 0, ...(contextId ? { contextId } : {}), ...(limit !== undefined ? { limit } : {}) };
};
