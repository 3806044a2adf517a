// A live context's session: its actor, writer, run and lease, and the folds of its stream (view, transcript).
//
// Requirements:
// - A run's handle is had one way: the one this process holds for the run, else one made from the log
//   (`handleOf`, `invokedHandle`); only `started` and `resumed` make one for a run this process begins,
//   and only `startRun`, `resumed` and `requestStop` ask the machine to start or stop a run.
// - A run starts only under the context's lease (`takeLease`): the last run's release lands first, then the
//   actor is brought up to the stream, which another process may have extended; a run the log shows open that
//   is not in flight here goes to the take-over (recovery.ts).
// - A command on a run not in flight here (a decision, a restore, a stop of a parked run, a take-over) works
//   under the lease (`underLease`) and gives it back after, unless a run is then in flight here or the work
//   recorded the run's end; another process holding it refuses the command as busy, or skips it.
import type { DataOf, RecordedEvent } from "../events/schema.ts";
import type { ContextId, RunId } from "../events/ids.ts";
import type { EventStore } from "../events/store.ts";
import { contextsProjection, type ContextView, unrecordedView } from "../projections/contexts.ts";
import { foldEvents } from "../projections/projection.ts";
import { historyOf, transcriptProjection, type RunTranscript } from "../projections/transcript.ts";
import type { ChatMessage } from "../models/messages.ts";
import { topicsOf, type TopicView } from "../projections/topics.ts";
import { RunHandle } from "../actors/runHandle.ts";
import { outcomeOf, type RunOutcome } from "../projections/runOutcome.ts";
import { INTERRUPTED_MESSAGE } from "../projections/runStatus.ts";
import { StreamWriter } from "../actors/streamWriter.ts";
import { type ContextActor, isInFlight, isRunning } from "../actors/contextQueries.ts";
import type { Resuming } from "./resume.ts";
import type { Recovery as RecoveryMode } from "./approvalPolicy.ts";
import type { Leases } from "./leases.ts";
import type { Clock } from "./clock.ts";
import { RuntimeError } from "./errors.ts";
import { RunWaiters } from "./runWaiters.ts";

export type { RunOutcome } from "../projections/runOutcome.ts";

/** What a context uses of the runtime: its log, the run leases, and the take-over of a run a gone process left. */
export type ContextPorts = {
  readonly store: EventStore;
  readonly clock: Clock;
  /** Other processes append to the log too (PostgreSQL): a lease taken may find the stream moved on. */
  readonly shared: boolean;
  readonly leases: Leases;
  /**
   * A run the log shows open that is not in flight here (its owner is gone, or the store refused its end), found
   * as the lease is taken: resumed here, or recorded as interrupted (recovery.ts).
   */
  takeOver(ac: ContextSession, mode: RecoveryMode): Promise<"resumed" | void>;
};

/** Whether `e` is the refusal of a lease another process holds. */
const isBusy = (e: unknown): boolean => e instanceof RuntimeError && e.reason === "busy";

/** One tool call of one run (tool call ids come from the model, so they may repeat across runs). */
export const callKey = (runId: string, toolCallId: string): string => `${runId}\u0000${toolCallId}`;

/** How a context's live state is written: only by its own methods below, named for what their callers mean. */
export class ContextSession {
  #view: ContextView;
  private readonly runs = new Map<string, RunTranscript>();
  /** The subordinates this context created, in order, with their slots (from its own SubordinateCalled facts). */
  readonly children: { contextId: string; slot: string }[] = [];
  /** The child each SubordinateCalled names, by the run and tool call that made it (`callKey`). */
  readonly subordinateCalls = new Map<string, string>();
  /** Answers of subordinates by the tool call that asked, for `§§result(...)` references. */
  readonly storedResults = new Map<string, string>();
  /** Every append of this context goes through it (and comes back to `onAppended`, the registry's). */
  readonly writer: StreamWriter;
  #actor: ContextActor | null = null;
  #run: RunHandle | null = null;
  /** A run resuming here after a restart, until its loop has taken the plan (runs.ts). */
  #resuming: Resuming | null = null;
  /** The end of the last run whose terminal fact this context applied. */
  #lastEnd: RunOutcome | null = null;
  /** Who waits for each run's end: answered as the machine ends it (`run.ended`), or failed by close. */
  readonly #waiters: RunWaiters;
  /** Serializes commands (send, stop, pause, resume) to this context. */
  #commands: Promise<unknown> = Promise.resolve();
  #passivateTimer: NodeJS.Timeout | null = null;
  /** The release of the last run's lease, which the next run's acquire must follow. */
  #leaseReleased: Promise<void> = Promise.resolve();

  /**
   * `events`: its whole stream; or, for a fresh subordinate not on the log yet, none and its `unrecorded`
   * ContextCreated, which the writer holds as the stream's first append. `onAppended`: what every append of its
   * writer reaches, as the store recorded it.
   */
  constructor(
    readonly id: ContextId,
    events: readonly RecordedEvent[],
    private readonly ports: ContextPorts,
    unrecorded: DataOf<"ContextCreated"> | null,
    onAppended: (ac: ContextSession, facts: RecordedEvent[]) => void,
  ) {
    this.#waiters = new RunWaiters(id);
    this.#view = contextsProjection.init(id);
    this.apply(events);
    if (unrecorded) this.#view = unrecordedView(unrecorded, ports.clock.now().toISOString());
    const opening = unrecorded ? [{ type: "ContextCreated" as const, data: unrecorded }] : [];
    this.writer = new StreamWriter(
      ports.store,
      id,
      this.#view.version,
      ports.clock,
      (facts) => onAppended(this, facts),
      opening,
    );
  }

  /** The context as its facts fold (contexts.ts). */
  get view(): ContextView {
    return this.#view;
  }

  /** Its machine (given once, by `attach`): what it asks whether a run is in flight, parked, or may take a message. */
  get actor(): ContextActor {
    return this.#actor!;
  }

  /** Gives the context its machine, once, as the registry spawned or created it. */
  attach(actor: ContextActor): void {
    if (this.#actor) throw new Error(`context ${this.id} already has its actor`);
    this.#actor = actor;
  }

  /** The handle of the run this process holds here (the last one it started, took or went on with), or null. */
  get run(): RunHandle | null {
    return this.#run;
  }

  /** The end of the last run whose terminal fact this context applied. */
  get lastEnd(): RunOutcome | null {
    return this.#lastEnd;
  }

  /** The waiters of each run by its id (read-only: `outcome` adds one, `answer` and `failUnanswered` settle them). */
  get outcomes(): ReadonlyMap<string, { readonly promise: Promise<RunOutcome> }> {
    return this.#waiters.byRun;
  }

  /** The release of the last run's lease, which the next acquire (and a run's `ended` for its caller) follows. */
  get leaseReleased(): Promise<void> {
    return this.#leaseReleased;
  }

  apply(facts: readonly RecordedEvent[]): void {
    for (const f of facts) this.#view = contextsProjection.evolve(this.#view, f);
    foldEvents(transcriptProjection, facts, this.runs);
    for (const f of facts) {
      if (f.type === "SubordinateCalled") {
        if (f.data.fresh) this.children.push({ contextId: f.data.childContextId, slot: f.data.jobId ?? "default" });
        this.subordinateCalls.set(callKey(f.data.runId, f.data.toolCallId), f.data.childContextId);
      }
      if (f.type === "SubordinateReturned" && f.data.result !== null)
        this.storedResults.set(f.data.toolCallId, f.data.result);
      const outcome = outcomeOf(f);
      if (outcome) this.#lastEnd = outcome;
    }
  }

  /** The messages the next model call starts from (without the system prompt). */
  transcript(): ChatMessage[] {
    return historyOf(this.runs.values());
  }

  /** The history as topics (runs), the standing summary and what it covers: what compaction plans from. */
  topics(): TopicView {
    return topicsOf(this.runs.values());
  }

  /** The end of run `runId`, once the machine has ended it (`answer`). */
  outcome(runId: string): Promise<RunOutcome> {
    return this.#waiters.of(runId);
  }

  /**
   * Answers the waiters of `runId` with how it ended: its terminal fact, else `unrecorded` (why none
   * could be written). The answer is kept until the next run's, for a waiter that asks just after.
   */
  answer(runId: string, unrecorded: string | null): void {
    this.#waiters.answer(
      this.#lastEnd?.runId === runId
        ? this.#lastEnd
        : {
            runId,
            status: "failed",
            response: null,
            failure: {
              reason: unrecorded === null ? "interrupted" : "internal",
              message: unrecorded ?? INTERRUPTED_MESSAGE,
            },
          },
    );
  }

  /** On close: the waiters nothing here will answer are refused as closed (runWaiters.ts). */
  failUnanswered(parked: { runId: string; approvals: readonly string[] } | null): void {
    this.#waiters.failUnanswered(parked);
  }

  /**
   * The handle of the open run `runId`, the one way to get it: the handle this process holds, else one made
   * from the log (a parked run restored here, or parked in another process), parked: nothing of it is in
   * flight, so a stop need not wait for a loop, and a message or a decision goes on with it as a parked run.
   */
  async handleOf(runId: RunId): Promise<RunHandle> {
    if (this.#run?.runId !== runId)
      this.#run = RunHandle.fromLog(this.id, runId, await this.ports.store.readStream(this.id), this.#run, {
        parked: true,
      });
    return this.#run;
  }

  /**
   * The handle of the run the machine invokes now: the one `started` or `resumed` made, else (a parked run going
   * on after its decisions, here or in another process) a new one from the log, keeping the parked handle's
   * children and jobs. `facts`: the stream as read then (null when nothing was read).
   */
  async invokedHandle(runId: RunId): Promise<{ handle: RunHandle; facts: RecordedEvent[] | null }> {
    const current = this.#run;
    if (current && current.runId === runId && !current.parked) return { handle: current, facts: null };
    const facts = await this.ports.store.readStream(this.id);
    this.#run = RunHandle.fromLog(this.id, runId, facts, current);
    return { handle: this.#run, facts };
  }

  /** The handle of a run `start` has just recorded; `firstCallRecorded`: its first ModelCalled went with its start. */
  started(runId: RunId, correlationId: string, firstCallRecorded: boolean): RunHandle {
    const handle = new RunHandle(this.id, runId, correlationId);
    handle.firstCallRecorded = firstCallRecorded;
    // A stop before the loop makes that call records it as aborted, as for any call in flight.
    if (firstCallRecorded) handle.inFlight = { kind: "model", step: 1, attempt: 1 };
    return (this.#run = handle);
  }

  /** The machine takes the run `started` recorded (`run.start`, with the facts of its start). */
  startRun(runId: RunId, facts: RecordedEvent[]): void {
    this.actor.send({ type: "run.start", facts, runId });
  }

  /**
   * A run going on here after a restart (resume.ts): its handle made from its facts, the plan its loop takes, and
   * the machine's `run.start` (legal from `failed`, where a context the log shows running restores).
   */
  resumed(resuming: Resuming, facts: readonly RecordedEvent[]): void {
    this.#resuming = resuming;
    this.#run = RunHandle.fromLog(this.id, resuming.runId, facts, null);
    const interventionPending = resuming.plan.undelivered > 0;
    this.actor.send({ type: "run.start", facts: [], runId: resuming.runId, interventionPending });
  }

  /** Asks the machine to stop run `runId` (`run.stop`), `by` recorded in its RunStopped unless someone asked first. */
  async requestStop(runId: RunId, by: "user" | "superior"): Promise<void> {
    // A parked run restored here has no handle yet: nothing of it is in flight.
    (await this.handleOf(runId)).stopRequestedBy ??= by;
    this.actor.send({ type: "run.stop" });
  }

  /** The plan of run `runId` resuming here, once: its loop takes it (runs.ts). */
  takeResuming(runId: RunId): Resuming | null {
    const resuming = this.#resuming?.runId === runId ? this.#resuming : null;
    this.#resuming = null;
    return resuming;
  }

  /** Brings the context up to its stream, which another process may have extended; returns what it read. */
  async catchUp(): Promise<RecordedEvent[]> {
    const newer = await this.ports.store.readStream(this.id, this.view.version + 1);
    if (newer.length === 0) return newer;
    this.apply(newer);
    this.writer.resetVersion(this.view.version);
    this.actor.send({ type: "facts.apply", facts: newer });
    return newer;
  }

  /**
   * Takes the context's run lease, then brings the actor up to the stream. A run a gone owner left is recorded
   * as interrupted, or with `openRun` "resume" goes on here (then the lease stays with that run).
   */
  async takeLease(openRun: RecoveryMode = "interrupt"): Promise<"resumed" | void> {
    // The last run's release must land first, or it would delete the lease taken here.
    await this.#leaseReleased;
    const lease = await this.ports.leases.acquire(this.id);
    if (!lease.ok)
      throw new RuntimeError("busy", `Context '${this.id}' is running in another process (${lease.owner}).`);
    // Alone on the log (PGlite), nothing can have been appended behind this actor's back.
    // The lease says the stream's version: an actor already there reads nothing.
    if (this.ports.shared && lease.version !== this.view.version) await this.catchUp();
    // The log shows a run open that is not in flight here: a crash, or an end the store refused.
    if (this.view.status === "running" && !isRunning(this.actor.getSnapshot()))
      return this.ports.takeOver(this, openRun);
  }

  /**
   * Does `work` under the context's lease, for a command on a run not in flight here (a decision, a stop or a
   * restore of a parked run, a take-over): the lease is taken and the context caught up with the log first,
   * unless a run of this process is in flight here (it holds the lease). After, the lease goes back unless a run
   * is then in flight here (a decision that let the run go on) or the work recorded the run's end (which frees it
   * in the log), so any process may drive the context next. `busy` another process holds the lease: "refuse"
   * throws that, "skip" does nothing and resolves undefined. `openRun`: as for `takeLease`.
   */
  async underLease<T>(
    work: () => Promise<T>,
    opts: { busy: "refuse" | "skip"; openRun?: RecoveryMode },
  ): Promise<T | undefined> {
    const holding = isInFlight(this.actor.getSnapshot());
    if (!holding) {
      try {
        await this.takeLease(opts.openRun);
      } catch (e) {
        if (opts.busy === "skip" && isBusy(e)) return undefined;
        throw e;
      }
    }
    const endBefore = this.#lastEnd;
    try {
      return await work();
    } finally {
      if (!holding && !isInFlight(this.actor.getSnapshot())) {
        this.letLeaseGo(this.#lastEnd !== endBefore ? "ended" : "release");
        await this.#leaseReleased;
      }
    }
  }

  /**
   * Lets the lease go: "ended", the run's end is in the log, which frees it (nothing is written); "release", no
   * end was recorded past it (a parked run, an end the store refused, a command that ended none): it is deleted.
   */
  private letLeaseGo(how: "ended" | "release"): void {
    const { leases } = this.ports;
    this.#leaseReleased = (how === "ended" ? leases.runEnded(this.id) : leases.release(this.id)).catch(() => undefined);
  }

  /**
   * The machine ended the run this process holds (its `run.ended` action): its lease is let go, and its waiters
   * answered with its end (`unrecorded`: why the store refused it). False when no run is held here.
   */
  runEnded(unrecorded: { runId: string; message: string } | null): boolean {
    const handle = this.#run;
    if (!handle) return false;
    const refused = unrecorded?.runId === handle.runId;
    this.letLeaseGo(refused ? "release" : "ended");
    this.answer(handle.runId, refused ? unrecorded.message : null);
    return true;
  }

  /**
   * The machine parked a run of this process (its `run.parked` action): the run's lease is let go, so the process
   * that records the last decision (this one or another) drives it on. Its waiters keep waiting.
   */
  runParked(): void {
    this.letLeaseGo("release");
  }

  /** Calls `passivate` after `ms` unless touched (`stayActive`) or scheduled again meanwhile. */
  schedulePassivation(ms: number, passivate: () => void): void {
    if (this.#passivateTimer) clearTimeout(this.#passivateTimer);
    this.#passivateTimer = setTimeout(passivate, ms);
    this.#passivateTimer.unref();
  }

  /** Cancels a scheduled passivation: the context is in use. */
  stayActive(): void {
    if (this.#passivateTimer) clearTimeout(this.#passivateTimer);
    this.#passivateTimer = null;
  }

  /** Runs `fn` after every earlier command to this context has finished. */
  serialize<T>(fn: () => Promise<T>): Promise<T> {
    const result = this.#commands.then(fn);
    this.#commands = result.catch(() => undefined);
    return result;
  }
}
