// The call gate alone: caps, FIFO order, a preset at its cap not holding back others, leaving the queue, rate limits, 429 pauses.
import { describe, expect, it } from "vitest";
import { CallGate, type Entry, type Ticket } from "../../src/models/callGate.ts";

const ticketOf = (e: Entry): Ticket => {
  if (!("ticket" in e)) throw new Error("expected a place at once");
  return e.ticket;
};
const queuedOf = (e: Entry) => {
  if ("ticket" in e) throw new Error("expected to wait");
  return e;
};

describe("when nothing is capped", () => {
  it("lets every call through at once", () => {
    const gate = new CallGate({ providers: { Default: {} } });
    const tickets = Array.from({ length: 50 }, (_, i) => ticketOf(gate.enter(i % 2 ? "Default" : null)));
    expect(gate.inFlight).toBe(50);
    for (const t of tickets) t.done({ kind: "replied", usage: null });
    expect(gate.inFlight).toBe(0);
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

describe("when a preset allows 2 requests per 100 ms window", () => {
  it("admits the third request one window after an earlier one ended, not before", async () => {
    const gate = new CallGate({ providers: { p: { requestsPerMinute: 1200, rateWindowMs: 100 } } });
    const a = ticketOf(gate.enter("p"));
    const b = ticketOf(gate.enter("p"));
    const c = queuedOf(gate.enter("p"));
    const admitted = c.admitted().then(() => Date.now());
    // Both in flight: nothing comes back before they end, however long that takes.
    // The clock is read before the call ends: the gate's own reading is no earlier, so the bound holds.
    const endedAt = Date.now();
    a.done({ kind: "replied", usage: null });
    expect(gate.waiting).toBe(1);
    expect((await admitted) - endedAt).toBeGreaterThanOrEqual(100);
    b.done();
  });

  it("counts tokens too: a call waits until the window has room for its counted input", async () => {
    const gate = new CallGate({ providers: { p: { tokensPerMinute: 60_000, rateWindowMs: 100 } } }); // 100 tokens a window
    const a = ticketOf(gate.enter("p", { tokens: 60 }));
    const b = queuedOf(gate.enter("p", { tokens: 60 }));
    const admitted = b.admitted().then(() => Date.now());
    const endedAt = Date.now();
    a.done({ kind: "replied", usage: { inputTokens: 60, outputTokens: 10 } });
    expect((await admitted) - endedAt).toBeGreaterThanOrEqual(100);
  });
});

describe("when a call gets a 429", () => {
  it("pauses its preset for every caller, then lets calls through one at a time, twice as many after each reply", async () => {
    const gate = new CallGate({ providers: {} });
    const first = ticketOf(gate.enter("p"));
    // Read before the 429 is reported: read after it, a millisecond tick in between made the bound fail (79 < 80).
    const pausedAt = Date.now();
    first.done({ kind: "rate_limited", pauseMs: 80 });
    const waiters = Array.from({ length: 4 }, () => queuedOf(gate.enter("p")));
    // Another preset is not paused.
    ticketOf(gate.enter("other")).done();
    const probe = await waiters[0]!.admitted();
    expect(Date.now() - pausedAt).toBeGreaterThanOrEqual(80);
    expect(gate.inFlight).toBe(1);
    expect(gate.waiting).toBe(3);
    probe.done({ kind: "replied", usage: null });
    const [second, third] = await Promise.all([waiters[1]!.admitted(), waiters[2]!.admitted()]);
    expect(gate.waiting).toBe(1);
    second.done({ kind: "replied", usage: null });
    third.done({ kind: "replied", usage: null });
    (await waiters[3]!.admitted()).done();
  });

  it("puts its retry before calls that were not sent yet", async () => {
    const gate = new CallGate({ providers: { p: { maxConcurrent: 1 } } });
    const holder = ticketOf(gate.enter("p"));
    const fresh = queuedOf(gate.enter("p"));
    const retry = queuedOf(gate.enter("p", { retry: true }));
    expect(retry.ahead).toBe(0);
    const order: string[] = [];
    const done = [
      fresh.admitted().then((t) => (order.push("fresh"), t.done())),
      retry.admitted().then((t) => (order.push("retry"), t.done())),
    ];
    holder.done();
    await Promise.all(done);
    expect(order).toEqual(["retry", "fresh"]);
  });
});
