// The base of the model-based commands: a step runs on the reference model and on the runtime, then waits
// until they agree and checks every invariant. The helpers pick the contexts a command applies to.
import fc from "fast-check";
import type { LifecycleHarness } from "./harness.ts";
import type { LifecycleModel } from "./lifecycleModel.ts";

export type Cmd = fc.AsyncCommand<LifecycleModel, LifecycleHarness>;

/**
 * Runs `act` on the runtime, moves the model to `next`, waits until they agree, checks the invariants.
 * A command names its context by `pick` among the contexts it applies to (so most generated commands
 * apply); `check` resolves it to `c<target>`, which `toString` then shows. Commands are cloned for
 * each run (fast-check's `cloneMethod`), so a resolved target never leaks from one run to another.
 */
export abstract class Step implements Cmd {
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

/** The indexes of the contexts that satisfy `p`. */
export const where = (m: Readonly<LifecycleModel>, p: (c: LifecycleModel["contexts"][number]) => boolean) =>
  m.contexts.filter(p).map((c) => c.index);

/** Token usage that differs from one answer to the next, so usage sums are checked over varied figures. */
export const usage = (h: LifecycleHarness) => {
  const n = Number(h.text("u").split("#")[1]);
  return { inputTokens: 10 + (n % 7), outputTokens: 1 + (n % 3) };
};

/** The contexts whose model call is open (waiting for an answer). */
export const withOpenCall = (m: Readonly<LifecycleModel>) => where(m, (c) => c.wait === "model");
