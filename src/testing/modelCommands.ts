// The commands that answer a context's open model call: a reply, a delegation, a failure.
import fc from "fast-check";
import * as M from "./lifecycleModel.ts";
import { delegate as delegateTurn, fail as failTurn, reply as replyTurn } from "./script.ts";
import type { LifecycleHarness } from "./harness.ts";
import type { LifecycleModel } from "./lifecycleModel.ts";
import { Step, usage, where, withOpenCall } from "./step.ts";

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
    return this.mode.kind === "byId"
      ? { kind: "byId", child: this.mode.child % m.contexts[this.target]!.children.length }
      : this.mode;
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
    if (outcome.kind === "refused")
      return `refused: ${outcome.why === "depth" ? "the maximum depth" : "the child is still running"}`;
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
