// The call gate alone: caps, FIFO order, a preset at its cap not holding back others, leaving the queue.
import { describe, expect, it } from "vitest";
import { CallGate, callGate, type Entry, type Ticket } from "../../src/models/callGate.ts";

const ticketOf = (e: Entry): Ticket => {
  if (!("ticket" in e)) throw new Error("expected a place at once");
  return e.ticket;
};
const queuedOf = (e: Entry) => {
  if ("ticket" in e) throw new Error("expected to wait");
  return e;
};

describe("when nothing is capped", () => {
  it("makes no gate at all", () => {
    expect(callGate({ providers: { Default: {} } })).toBeNull();
    expect(callGate({ maxConcurrent: 2, providers: {} })).toBeInstanceOf(CallGate);
  });
});

describe("when the runtime caps calls at 2", () => {
  it("admits two at once, queues the rest, and admits them in arrival order as places free up", async () => {
    const gate = new CallGate({ maxConcurrent: 2, providers: {} });
    const first = ticketOf(gate.enter(null));
    const second = ticketOf(gate.enter("Default"));
    const waiting = [gate.enter(null), gate.enter("Default"), gate.enter(null)].map(queuedOf);
    expect(waiting.map((w) => w.ahead)).toEqual([0, 1, 2]);
    expect(gate.inFlight).toBe(2);
    const order: number[] = [];
    const admitted = waiting.map((w, i) => w.admitted().then((t) => (order.push(i), t)));
    first.done();
    first.done(); // a second release gives nothing back twice
    const t0 = await admitted[0]!;
    expect(gate.inFlight).toBe(2);
    second.done();
    const t1 = await admitted[1]!;
    t0.done();
    t1.done();
    (await admitted[2]!).done();
    expect(order).toEqual([0, 1, 2]);
    expect(gate.peak).toBe(2);
    expect(gate.inFlight).toBe(0);
  });

  it("takes a waiter whose signal aborts out of the queue, so the next one gets the place", async () => {
    const gate = new CallGate({ maxConcurrent: 1, providers: {} });
    const holder = ticketOf(gate.enter(null));
    const stopped = queuedOf(gate.enter(null));
    const next = queuedOf(gate.enter(null));
    const abort = new AbortController();
    let stoppedAdmitted = false;
    void stopped.admitted(abort.signal).then(() => (stoppedAdmitted = true));
    abort.abort();
    expect(gate.waiting).toBe(1);
    holder.done();
    (await next.admitted()).done();
    expect(stoppedAdmitted).toBe(false);
    expect(gate.inFlight).toBe(0);
  });

  it("gives back a place admitted just before its waiter was cancelled", () => {
    const gate = new CallGate({ maxConcurrent: 1, providers: {} });
    const holder = ticketOf(gate.enter(null));
    const w = queuedOf(gate.enter(null));
    holder.done();
    expect(gate.inFlight).toBe(1);
    w.cancel();
    expect(gate.inFlight).toBe(0);
  });
});

describe("when a preset is capped at 1", () => {
  it("queues its calls in order while calls to other presets pass", async () => {
    const gate = new CallGate({ providers: { slow: { maxConcurrent: 1 } } });
    const a = ticketOf(gate.enter("slow"));
    const b = queuedOf(gate.enter("slow"));
    ticketOf(gate.enter("fast")).done();
    ticketOf(gate.enter(null)).done();
    const c = queuedOf(gate.enter("slow"));
    const order: string[] = [];
    const bDone = b.admitted().then((t) => (order.push("b"), t));
    const cDone = c.admitted().then((t) => (order.push("c"), t));
    a.done();
    (await bDone).done();
    (await cDone).done();
    expect(order).toEqual(["b", "c"]);
  });
});
