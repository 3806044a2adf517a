// fast-check commands over a real runtime: each runs on the reference model and on the runtime, then
// waits until they agree and checks every invariant. Their `toString()` reads like a script.
import fc from "fast-check";
import * as M from "./lifecycleModel.ts";
import { callTool, delegate as delegateTurn, fail as failTurn, reply as replyTurn } from "./script.ts";
import { APPROVAL_TIMEOUT_MS, type LifecycleHarness } from "./harness.ts";
import type { LifecycleModel } from "./lifecycleModel.ts";

type Cmd = fc.AsyncCommand<LifecycleModel, LifecycleHarness>;

/**
 * Runs `act` on the runtime, moves the model to `next`, waits until they agree, checks the invariants.
 * A command names its context by `pick` among the contexts it applies to (so most generated commands
 * apply); `check` resolves it to `c<target>`, which `toString` then shows. Commands are cloned for
 * each run (fast-check's `cloneMethod`), so a resolved target never leaks from one run to another.
 */
abstract class Step implements Cmd {
  target = -1;
  constructor(readonly pick = 0) {}
  /** The contexts this command applies to now (none: it is skipped). */
  protected candidates(_m: Readonly<LifecycleModel>): number[] {
    return [0];
  }
  protected abstract next(m: LifecycleModel): LifecycleModel;
  protected abstract act(h: LifecycleHarness, m: LifecycleModel): Promise<string | void>;
  protected abstract describe(c: string): string;
  abstract [fc.cloneMethod](): Step;

  check(m: Readonly<LifecycleModel>): boolean {
    const options = this.candidates(m);
    if (options.length === 0) return false;
    this.target = options[this.pick % options.length]!;
    return true;
  }

  toString(): string {
    return this.describe(this.target >= 0 ? `c${this.target}` : `<context pick ${this.pick}>`);
  }

  async run(m: LifecycleModel, h: LifecycleHarness): Promise<void> {
    const want = this.next(m);
    const note = await this.act(h, m);
    Object.assign(m, want);
    h.script.push(note ? `${this.toString()}  (${note})` : this.toString());
    await h.settle(m);
    await h.check();
  }
}

const where = (m: Readonly<LifecycleModel>, p: (c: LifecycleModel["contexts"][number]) => boolean) => m.contexts.filter(p).map((c) => c.index);

const usage = (h: LifecycleHarness) => {
  const n = Number(h.text("u").split("#")[1]);
  return { inputTokens: 10 + (n % 7), outputTokens: 1 + (n % 3) };
};

export class Send extends Step {
  protected override candidates(m: Readonly<LifecycleModel>) {
    return where(m, (c) => c.status !== "running");
  }
  protected next(m: LifecycleModel) {
    return M.send(m, this.target);
  }
  protected async act(h: LifecycleHarness) {
    h.send(this.target, h.text(`message to c${this.target}`));
  }
  protected describe(c: string) {
    return `send ${c} a message`;
  }
  [fc.cloneMethod]() {
    return new Send(this.pick);
  }
}

export class Intervene extends Step {
  protected override candidates(m: Readonly<LifecycleModel>) {
    return where(m, (c) => c.status === "running");
  }
  protected next(m: LifecycleModel) {
    return M.intervene(m, this.target);
  }
  protected async act(h: LifecycleHarness) {
    const text = h.text(`intervention for c${this.target}`);
    h.send(this.target, text);
    // Recorded at once: wait for it, so the next step sees it.
    const id = h.id(this.target);
    for (const deadline = Date.now() + 3000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 1))) {
      const events = await h.rt.events({ contextId: id });
      if (events.some((e) => e.type === "InterventionReceived" && e.data.text === text)) return;
    }
    throw new Error(`the intervention for c${this.target} was never recorded`);
  }
  protected describe(c: string) {
    return `send ${c} a message while it runs (an intervention)`;
  }
  [fc.cloneMethod]() {
    return new Intervene(this.pick);
  }
}

export class Pause extends Step {
  protected override candidates(m: Readonly<LifecycleModel>) {
    return where(m, (c) => !c.paused);
  }
  protected next(m: LifecycleModel) {
    return M.pause(m, this.target);
  }
  protected async act(h: LifecycleHarness) {
    await h.rt.pause(h.id(this.target));
  }
  protected describe(c: string) {
    return `pause ${c}`;
  }
  [fc.cloneMethod]() {
    return new Pause(this.pick);
  }
}

export class Resume extends Step {
  protected override candidates(m: Readonly<LifecycleModel>) {
    return where(m, (c) => c.paused);
  }
  protected next(m: LifecycleModel) {
    return M.resume(m, this.target);
  }
  protected async act(h: LifecycleHarness) {
    await h.rt.resume(h.id(this.target));
  }
  protected describe(c: string) {
    return `resume ${c}`;
  }
  [fc.cloneMethod]() {
    return new Resume(this.pick);
  }
}

/** Stops a running context; `role` narrows it to a parent waiting on its child, or a child its caller waits on. */
export class Stop extends Step {
  constructor(
    pick = 0,
    readonly role: "any" | "parent" | "child" = "any",
  ) {
    super(pick);
  }
  protected override candidates(m: Readonly<LifecycleModel>) {
    return where(m, (c) => c.status === "running" && (this.role === "any" || (this.role === "parent" ? c.wait === "child" : c.superior !== null)));
  }
  protected next(m: LifecycleModel) {
    return M.stop(m, this.target);
  }
  protected async act(h: LifecycleHarness, m: LifecycleModel) {
    const c = m.contexts[this.target]!;
    await h.rt.stop(h.id(this.target));
    const role = [c.wait === "child" ? `its child c${c.waitingOn} runs` : null, c.superior !== null ? `c${c.superior} waits on it` : null];
    return role.filter(Boolean).join("; ") || undefined;
  }
  protected describe(c: string) {
    return this.role === "parent" ? `stop ${c}, a parent` : this.role === "child" ? `stop ${c}, a child` : `stop ${c}`;
  }
  [fc.cloneMethod]() {
    return new Stop(this.pick, this.role);
  }
}

const withOpenCall = (m: Readonly<LifecycleModel>) => where(m, (c) => c.wait === "model");

export class Reply extends Step {
  protected override candidates(m: Readonly<LifecycleModel>) {
    return withOpenCall(m);
  }
  protected next(m: LifecycleModel) {
    return M.reply(m, this.target);
  }
  protected async act(h: LifecycleHarness) {
    h.desk.answer(h.id(this.target), replyTurn(h.text(`answer of c${this.target}`), usage(h)));
  }
  protected describe(c: string) {
    return `${c}'s model answers`;
  }
  [fc.cloneMethod]() {
    return new Reply(this.pick);
  }
}

export type DelegateMode = M.DelegateMode;

export class Delegate extends Step {
  constructor(
    pick: number,
    readonly mode: DelegateMode,
  ) {
    super(pick);
  }
  protected override candidates(m: Readonly<LifecycleModel>) {
    return this.mode.kind === "byId" ? where(m, (c) => c.wait === "model" && c.children.length > 0) : withOpenCall(m);
  }
  /** For "byId", the child as an index among the caller's children. */
  private mode_(m: Readonly<LifecycleModel>): DelegateMode {
    return this.mode.kind === "byId" ? { kind: "byId", child: this.mode.child % m.contexts[this.target]!.children.length } : this.mode;
  }
  protected next(m: LifecycleModel) {
    return M.delegate(m, this.target, this.mode_(m));
  }
  protected async act(h: LifecycleHarness, m: LifecycleModel) {
    const mode = this.mode_(m);
    const outcome = M.delegationOutcome(m, this.target, mode);
    const message = h.text(`task from c${this.target}`);
    const args =
      mode.kind === "fresh"
        ? { message, reset: true }
        : mode.kind === "default"
          ? { message }
          : { message, context_id: h.id(m.contexts[this.target]!.children[mode.child]!), reset: false };
    h.desk.answer(h.id(this.target), delegateTurn(args, { usage: usage(h) }));
    if (outcome.kind === "refused") return `refused: ${outcome.why === "depth" ? "the maximum depth" : "the child is still running"}`;
    return outcome.fresh ? `creates c${outcome.child}` : `continues c${outcome.child}`;
  }
  protected describe(c: string) {
    const what =
      this.mode.kind === "fresh"
        ? "a fresh child (reset: true)"
        : this.mode.kind === "default"
          ? "its newest child, or a fresh one (no context_id)"
          : `continue one of its children by context_id (pick ${this.mode.child})`;
    return `${c}'s model delegates to ${what}`;
  }
  [fc.cloneMethod]() {
    return new Delegate(this.pick, this.mode);
  }
}

export class FailModel extends Step {
  constructor(
    pick: number,
    readonly retryable: boolean,
  ) {
    super(pick);
  }
  protected override candidates(m: Readonly<LifecycleModel>) {
    return withOpenCall(m);
  }
  protected next(m: LifecycleModel) {
    return M.failCall(m, this.target, this.retryable);
  }
  protected async act(h: LifecycleHarness) {
    h.desk.answer(h.id(this.target), this.retryable ? failTurn("server_error") : failTurn("authentication"));
  }
  protected describe(c: string) {
    return `${c}'s model call fails (${this.retryable ? "retryable: HTTP 500" : "not retryable: authentication"})`;
  }
  [fc.cloneMethod]() {
    return new FailModel(this.pick, this.retryable);
  }
}

/** The open model call asks for a tool that needs approval: the run parks. */
export class AskApproval extends Step {
  protected override candidates(m: Readonly<LifecycleModel>) {
    return withOpenCall(m);
  }
  protected next(m: LifecycleModel) {
    return M.askApproval(m, this.target);
  }
  protected async act(h: LifecycleHarness) {
    // A reason of its own each time: the same reply twice would be refused as a repeat.
    h.desk.answer(h.id(this.target), callTool("sensitive", { why: h.text("ask") }, { usage: usage(h) }));
  }
  protected describe(c: string) {
    return `${c}'s model calls a tool that needs approval (the run parks)`;
  }
  [fc.cloneMethod]() {
    return new AskApproval(this.pick);
  }
}

/** A person approves or rejects the parked call of a context (through the runtime's API). */
export class Decide extends Step {
  constructor(
    pick: number,
    readonly granted: boolean,
  ) {
    super(pick);
  }
  protected override candidates(m: Readonly<LifecycleModel>) {
    return where(m, (c) => c.wait === "approval");
  }
  protected next(m: LifecycleModel) {
    return M.decide(m, this.target);
  }
  protected async act(h: LifecycleHarness) {
    const id = h.id(this.target);
    const pending = (await h.rt.approvals({ contextId: id })).filter((a) => a.contextId === id);
    if (pending.length !== 1) throw new Error(`c${this.target} should wait on one approval, the runtime lists ${pending.length}`);
    const approvalId = pending[0]!.approvalId;
    if (this.granted) await h.rt.approve(approvalId, { by: "tester" });
    else await h.rt.reject(approvalId, { by: "tester", reason: h.text("no") });
    // Single-use: a second decision is refused, and writes nothing.
    const again = await h.rt.approve(approvalId, { by: "tester" }).then(() => "accepted", (e: { reason?: string }) => e.reason);
    if (again !== "already_decided" && again !== "run_ended") throw new Error(`a second decision for c${this.target} was ${again}`);
  }
  protected describe(c: string) {
    return `${this.granted ? "approve" : "reject"} ${c}'s parked call`;
  }
  [fc.cloneMethod]() {
    return new Decide(this.pick, this.granted);
  }
}

/** Time passes: every pending approval times out (denied "timed out"). */
export class TimeOut extends Step {
  protected override candidates(m: Readonly<LifecycleModel>) {
    return where(m, (c) => c.wait === "approval").slice(0, 1);
  }
  protected next(m: LifecycleModel) {
    return M.timeOut(m);
  }
  protected async act(h: LifecycleHarness) {
    h.clock.advance(APPROVAL_TIMEOUT_MS);
  }
  protected describe() {
    return "time passes: every pending approval times out";
  }
  [fc.cloneMethod]() {
    return new TimeOut();
  }
}

export class Restart extends Step {
  protected next(m: LifecycleModel) {
    return M.restart(m);
  }
  protected async act(h: LifecycleHarness) {
    await h.restart();
  }
  protected describe() {
    return "restart the runtime (close it, createRuntime on the same store)";
  }
  [fc.cloneMethod]() {
    return new Restart();
  }
}

export class Crash extends Step {
  protected next(m: LifecycleModel) {
    return M.restart(m);
  }
  protected async act(h: LifecycleHarness) {
    await h.crash();
  }
  protected describe() {
    return "crash: the runtime's store handle dies mid-flight, nothing is closed; reopen";
  }
  [fc.cloneMethod]() {
    return new Crash();
  }
}

const pick = fc.nat({ max: 7 });

/**
 * Every command of the lifecycle and delegation rules, weighted toward the model's answers (which move
 * runs along); restart and crash are rarer.
 */
export const lifecycleCommands = (): fc.Arbitrary<Cmd>[] => [
  pick.map((p) => new Send(p)),
  pick.map((p) => new Send(p)),
  pick.map((p) => new Intervene(p)),
  pick.map((p) => new Pause(p)),
  pick.map((p) => new Resume(p)),
  pick.map((p) => new Stop(p)),
  pick.map((p) => new Stop(p, "parent")),
  pick.map((p) => new Stop(p, "child")),
  pick.map((p) => new Reply(p)),
  pick.map((p) => new Reply(p)),
  pick.map((p) => new Reply(p)),
  pick.map((p) => new Delegate(p, { kind: "fresh" })),
  pick.map((p) => new Delegate(p, { kind: "fresh" })),
  pick.map((p) => new Delegate(p, { kind: "default" })),
  fc.tuple(pick, fc.nat({ max: 3 })).map(([p, k]) => new Delegate(p, { kind: "byId", child: k })),
  fc.tuple(pick, fc.boolean()).map(([p, r]) => new FailModel(p, r)),
  pick.map((p) => new AskApproval(p)),
  fc.tuple(pick, fc.boolean()).map(([p, g]) => new Decide(p, g)),
  fc.constant(null).map(() => new TimeOut()),
  fc.constant(null).map(() => new Restart()),
  fc.constant(null).map(() => new Crash()),
];
