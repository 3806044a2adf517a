// A real runtime driven step by step: a model whose calls stay open until the test answers them, a store
// handle that can "crash", and a comparison of the runtime with the reference model after every step.
import type { EventStore, SqlExecutor } from "../events/store.ts";
import type { ModelRequest, ModelTurn } from "../models/port.ts";
import { scriptedModel, type ScriptedModel } from "../models/scripted.ts";
import { createRuntime, RuntimeError, type Runtime, type RuntimeOptions } from "../runtime/runtime.ts";
import { randomUUID } from "node:crypto";
import type { Clock } from "../events/clock.ts";
import { defineTool, type Tool } from "../tools/defineTool.ts";
import { z } from "zod";
import type { ContextView } from "../projections/contexts.ts";
import { InvariantViolation, LogMemory } from "./invariants.ts";
import { checkInvariants } from "./runtimeInvariants.ts";
import { openCalls, type LifecycleModel } from "./lifecycleModel.ts";

// ------------------------------------------------------------------------------------------ the model desk

type OpenCall = { request: ModelRequest; resolve: (t: ModelTurn) => void; reject: (e: unknown) => void };

/**
 * A model whose every call stays open until the test answers it, so "stop while the model runs" is
 * real. At most one call per context can be open; a second one is recorded as a problem.
 */
export class ModelDesk {
  private readonly open = new Map<string, OpenCall>();
  readonly problems: string[] = [];
  readonly model: ScriptedModel;

  constructor() {
    this.model = scriptedModel(
      (request) =>
        new Promise<ModelTurn>((resolve, reject) => {
          const id = request.contextId;
          if (this.open.has(id)) this.problems.push(`two model calls open at once for context ${id}`);
          const call: OpenCall = { request, resolve, reject };
          this.open.set(id, call);
          // A stop aborts the call (the scripted model rejects it): it is no longer open.
          request.signal.addEventListener("abort", () => this.open.get(id) === call && this.open.delete(id), {
            once: true,
          });
        }),
    );
  }

  /** Context ids with a model call open now. */
  openContexts(): string[] {
    return [...this.open.keys()];
  }

  /** Answers the open call of `contextId` with a turn, or makes it throw `Error`. */
  answer(contextId: string, turn: ModelTurn | Error): ModelRequest {
    const call = this.open.get(contextId);
    if (!call) throw new Error(`no model call is open for context ${contextId}`);
    this.open.delete(contextId);
    if (turn instanceof Error) call.reject(turn);
    else call.resolve(turn);
    return call.request;
  }

  /** Forgets every open call without answering (their runtime is gone). */
  forget(): void {
    this.open.clear();
  }
}

// ------------------------------------------------------------------------------------------ a store that can crash

export type CrashableStore = EventStore & {
  /**
   * The process "dies": calls already at the database finish (what was acknowledged stays), every later
   * call of this handle never settles, as if the process were gone. Resolves once nothing is in flight.
   */
  crash(): Promise<void>;
};

/** A handle on `store` for one runtime; `crash()` cuts it off without touching the store itself. */
export const crashableStore = (store: EventStore): CrashableStore => {
  let dead = false;
  let inFlight = 0;
  let idle: (() => void)[] = [];
  const never = <T>() => new Promise<T>(() => undefined);
  const track =
    <A extends unknown[], T>(f: (...a: A) => Promise<T>) =>
    (...a: A): Promise<T> => {
      if (dead) return never<T>();
      inFlight++;
      return f(...a).finally(() => {
        inFlight--;
        if (inFlight === 0) for (const w of idle.splice(0)) w();
      });
    };
  const sql: SqlExecutor = {
    query: track((q: string, p?: unknown[]) => store.sql.query(q, p)) as SqlExecutor["query"],
    exec: track((q: string) => store.sql.exec(q)),
    transaction: track((fn: (tx: SqlExecutor) => Promise<unknown>) =>
      store.sql.transaction(fn),
    ) as SqlExecutor["transaction"],
  };
  return {
    sql,
    append: track((s, e, o) => store.append(s, e, o)),
    readStream: track((s, v) => store.readStream(s, v)),
    streamVersion: track((s) => store.streamVersion(s)),
    readAll: track((a, l) => store.readAll(a, l)),
    iterateAll: (after, pageSize) => store.iterateAll(after, pageSize),
    headPosition: track(() => store.headPosition()),
    ...(store.settledPosition ? { settledPosition: track(() => store.settledPosition!()) } : {}),
    verify: track((o) => store.verify(o)),
    subscribe: (after, listener) => store.subscribe(after, (e) => (dead ? undefined : listener(e))),
    onAppend: (hook) => store.onAppend(hook),
    // The store outlives its handles: the test closes it.
    close: async () => undefined,
    crash: async () => {
      dead = true;
      if (inFlight > 0) await new Promise<void>((r) => idle.push(r));
    },
  };
};

// ------------------------------------------------------------------------------------------ time and approvals

/** A clock whose waits end only when the test lets time pass (`advance`): an approval times out on command. */
export class HarnessClock implements Clock {
  private offset = 0;
  private readonly sleepers = new Set<{ until: number; wake: () => void }>();
  now = (): Date => new Date(Date.now() + this.offset);
  uuid = (): string => randomUUID();
  sleep = (ms: number, signal: AbortSignal): Promise<void> =>
    new Promise<void>((resolve, reject) => {
      if (signal.aborted) return reject(signal.reason);
      const sleeper = { until: this.now().getTime() + ms, wake: resolve };
      this.sleepers.add(sleeper);
      signal.addEventListener("abort", () => (this.sleepers.delete(sleeper), reject(signal.reason)), { once: true });
    });
  /** `ms` pass at once: every wait that ends by then ends. */
  advance(ms: number): void {
    this.offset += ms;
    const now = this.now().getTime();
    for (const s of this.sleepers) {
      if (s.until > now) continue;
      this.sleepers.delete(s);
      s.wake();
    }
  }
}

/** How long a call waits for a decision before it is denied as "timed out" (on the harness's clock). */
export const APPROVAL_TIMEOUT_MS = 3_600_000;

/** The tool of the harness whose every call waits for a decision. */
export const sensitiveTool: Tool<unknown> = defineTool({
  name: "sensitive",
  description: "does something a person must allow first",
  input: z.object({ why: z.string().optional() }),
  needsApproval: true,
  run: () => "done",
}) as Tool<unknown>;

// ------------------------------------------------------------------------------------------ the harness

export type HarnessOptions = {
  /** The store every runtime of the harness opens (shared across sequences: each starts its own root). */
  store: EventStore;
  /** More runtime options (profiles, tools, limits); `model` and `store` are the harness's. */
  runtime?: Partial<Omit<RuntimeOptions, "store" | "model">>;
  /** How long the runtime may take to reach the state the reference model predicts. */
  settleTimeoutMs?: number;
};

/** The limits the harness runs with, also given to the reference model. */
export const HARNESS_LIMITS = { maxDepth: 2, modelRetries: 1, retryBaseMs: 1, retryMaxMs: 2, passivateAfterMs: 20 };

/**
 * A real runtime on a real store, one delegation tree (c0 = its root), driven command by command.
 * `ids[i]` is the real id of the reference model's context `c<i>`.
 */
export class LifecycleHarness {
  rt!: Runtime;
  desk!: ModelDesk;
  readonly clock = new HarnessClock();
  private handle!: CrashableStore;
  readonly ids: string[] = [];
  readonly memory = new LogMemory();
  /** The steps done so far, as a script (for failure messages). */
  readonly script: string[] = [];
  /** Rejections of sends the harness did not await (a runtime that throws at a caller). */
  readonly errors: unknown[] = [];
  /** The runtimes a restart closed: a send still waiting on one is rejected as "closed" by design (its run stays parked). */
  private readonly closed = new WeakSet<Runtime>();
  private counter = 0;
  private readonly abandoned: Runtime[] = [];

  private constructor(private readonly options: HarnessOptions) {}

  static async start(options: HarnessOptions): Promise<LifecycleHarness> {
    const h = new LifecycleHarness(options);
    await h.open();
    const root = await h.rt.createContext({ name: "c0" });
    h.ids.push(root.id);
    return h;
  }

  get rootId(): string {
    return this.ids[0]!;
  }

  get limits() {
    return { ...HARNESS_LIMITS, ...this.options.runtime?.limits };
  }

  private async open(): Promise<void> {
    this.desk = new ModelDesk();
    this.handle = crashableStore(this.options.store);
    // The reference model's crash rule is the interrupting one: a run the crash cut off ends as interrupted.
    this.rt = await createRuntime({
      recovery: "interrupt",
      approvals: { timeoutMs: APPROVAL_TIMEOUT_MS },
      clock: this.clock,
      ...this.options.runtime,
      tools: [sensitiveTool, ...(this.options.runtime?.tools ?? [])],
      store: this.handle,
      model: this.desk.model,
      limits: this.limits,
    });
  }

  /** A text no other step of this process uses (the loop warns about repeated replies). */
  text(kind: string): string {
    return `${kind} #${++this.counter}`;
  }

  id(index: number): string {
    const id = this.ids[index];
    if (id === undefined) throw new Error(`c${index} has no real context yet`);
    return id;
  }

  /**
   * Sends without waiting for the run's end; a rejection is kept in `errors`, except the one `close()`
   * gives a send whose run it left parked awaiting approval (a RuntimeError "closed" from a runtime the
   * harness closed): the run goes on in the next runtime, which the reference model follows.
   */
  send(index: number, text: string): void {
    const rt = this.rt;
    rt.send(this.id(index), text).catch((e: unknown) => {
      if (e instanceof RuntimeError && e.reason === "closed" && this.closed.has(rt)) return;
      this.errors.push(e);
    });
  }

  /** Closes the runtime (runs in flight are recorded as interrupted) and opens a new one on the same store. */
  async restart(): Promise<void> {
    this.closed.add(this.rt);
    await this.rt.close();
    this.desk.forget();
    await this.open();
  }

  /** The runtime's process "dies" (its store handle is cut off, nothing is closed), and a new one opens the log. */
  async crash(): Promise<void> {
    await this.handle.crash();
    this.abandoned.push(this.rt);
    this.desk.forget();
    await this.open();
  }

  async close(): Promise<void> {
    // A run parked in this tree outlives close() on the log, and a later runtime on the shared store would
    // time it out on its own clock: the sequence ends its parked runs first.
    for (const v of await this.rt.contexts({ rootContextId: this.rootId })) {
      if (v.status === "running" && v.awaitingApproval.length > 0) await this.rt.stop(v.id).catch(() => null);
    }
    await this.rt.close();
  }

  /** Where the runtime and the model differ now (empty when they agree). */
  async differences(model: LifecycleModel): Promise<string[]> {
    const views = await this.rt.contexts({ rootContextId: this.rootId });
    const byId = new Map(views.map((v) => [v.id, v]));
    // Learn the ids of contexts the model created: the k-th child of c<p> is the k-th real child of its parent.
    for (const c of model.contexts) {
      if (this.ids[c.index] !== undefined || c.parent === null || this.ids[c.parent] === undefined) continue;
      const kids = views
        .filter((v) => v.parentContextId === this.ids[c.parent!])
        .sort((a, b) => a.createdPosition - b.createdPosition);
      const k = model.contexts[c.parent]!.children.indexOf(c.index);
      if (kids[k]) this.ids[c.index] = kids[k]!.id;
    }
    const out: string[] = [];
    if (views.length !== model.contexts.length)
      out.push(`the tree has ${views.length} context(s), the model ${model.contexts.length}`);
    for (const c of model.contexts) {
      const view: ContextView | undefined = this.ids[c.index] ? byId.get(this.ids[c.index]!) : undefined;
      if (!view) {
        out.push(`c${c.index} does not exist`);
        continue;
      }
      const parentId = c.parent === null ? null : (this.ids[c.parent] ?? "?");
      if (view.status !== c.status) out.push(`c${c.index} is ${view.status}, the model says ${c.status}`);
      if (view.paused !== c.paused) out.push(`c${c.index} paused=${view.paused}, the model says ${c.paused}`);
      if (view.agentNumber !== c.number || view.depth !== c.depth)
        out.push(
          `c${c.index} is A${view.agentNumber} at depth ${view.depth}, the model says A${c.number} at ${c.depth}`,
        );
      if (view.parentContextId !== parentId)
        out.push(`c${c.index}'s parent is ${view.parentContextId}, the model says c${c.parent}`);
    }
    const open = new Set(this.desk.openContexts());
    const want = new Set(openCalls(model).map((i) => this.ids[i]));
    for (const id of open)
      if (!want.has(id)) out.push(`a model call is open for c${this.ids.indexOf(id)}, the model says none`);
    for (const id of want)
      if (!open.has(id!)) out.push(`no model call is open for c${this.ids.indexOf(id!)}, the model says one`);
    out.push(...this.desk.problems);
    return out;
  }

  /** Waits until the runtime is where the model says (twice in a row, a moment apart), else throws with the differences. */
  async settle(model: LifecycleModel): Promise<void> {
    const deadline = Date.now() + (this.options.settleTimeoutMs ?? 3000);
    let agreedOnce = false;
    for (;;) {
      const diff = await this.differences(model);
      if (diff.length === 0) {
        if (agreedOnce) return;
        agreedOnce = true;
        await new Promise((r) => setTimeout(r, 1));
        continue;
      }
      agreedOnce = false;
      if (Date.now() > deadline)
        throw new Error(
          `the runtime does not do what the reference model says:\n  ${diff.join("\n  ")}\n${this.describe()}`,
        );
      await new Promise((r) => setTimeout(r, 2));
    }
  }

  /** Every invariant over the tree, plus no caller ever got an error thrown. */
  async check(): Promise<void> {
    const violations = await checkInvariants(this.rt, { rootContextId: this.rootId, memory: this.memory });
    if (violations.length > 0) throw new Error(`${new InvariantViolation(violations).message}\n${this.describe()}`);
    if (this.errors.length > 0) throw new Error(`a send was rejected: ${String(this.errors[0])}\n${this.describe()}`);
  }

  describe(): string {
    return `after the script:\n  ${this.script.join("\n  ")}`;
  }
}
