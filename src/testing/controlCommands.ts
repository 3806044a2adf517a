// The commands a user or operator gives the runtime: send, intervene, pause, resume, stop, restart, crash.
import fc from "fast-check";
import * as M from "./lifecycleModel.ts";
import type { LifecycleHarness } from "./harness.ts";
import type { LifecycleModel } from "./lifecycleModel.ts";
import { Step, where } from "./step.ts";

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
    return where(
      m,
      (c) =>
        c.status === "running" &&
        (this.role === "any" || (this.role === "parent" ? c.wait === "child" : c.superior !== null)),
    );
  }
  protected next(m: LifecycleModel) {
    return M.stop(m, this.target);
  }
  protected async act(h: LifecycleHarness, m: LifecycleModel) {
    const c = m.contexts[this.target]!;
    await h.rt.stop(h.id(this.target));
    const role = [
      c.wait === "child" ? `its child c${c.waitingOn} runs` : null,
      c.superior !== null ? `c${c.superior} waits on it` : null,
    ];
    return role.filter(Boolean).join("; ") || undefined;
  }
  protected describe(c: string) {
    return this.role === "parent" ? `stop ${c}, a parent` : this.role === "child" ? `stop ${c}, a child` : `stop ${c}`;
  }
  [fc.cloneMethod]() {
    return new Stop(this.pick, this.role);
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
