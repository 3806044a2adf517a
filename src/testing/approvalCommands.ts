// The commands of tool approval: the model asks for a tool that needs approval, a person decides, or time runs out.
import fc from "fast-check";
import * as M from "./lifecycleModel.ts";
import { callTool } from "./script.ts";
import { APPROVAL_TIMEOUT_MS, type LifecycleHarness } from "./harness.ts";
import type { LifecycleModel } from "./lifecycleModel.ts";
import { Step, usage, where, withOpenCall } from "./step.ts";

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
    if (pending.length !== 1)
      throw new Error(`c${this.target} should wait on one approval, the runtime lists ${pending.length}`);
    const approvalId = pending[0]!.approvalId;
    if (this.granted) await h.rt.approve(approvalId, { by: "tester" });
    else await h.rt.reject(approvalId, { by: "tester", reason: h.text("no") });
    // Single-use: a second decision is refused, and writes nothing.
    const again = await h.rt.approve(approvalId, { by: "tester" }).then(
      () => "accepted",
      (e: { reason?: string }) => e.reason,
    );
    if (again !== "already_decided" && again !== "run_ended")
      throw new Error(`a second decision for c${this.target} was ${again}`);
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
