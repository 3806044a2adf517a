// The log as Server-Sent Events over real HTTP: resume after a dropped connection, 100 clients at once, a slow client.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EventHub } from "../../src/server/eventHub.ts";
import { isLiveDelta } from "../../src/index.ts";
import { call, isFirstStep } from "../delegation/support.ts";
import { api, served, sse, type Served } from "./support.ts";

let s: Served;

// A0 delegates to A1 which delegates to A2: a small tree whose events interleave across three streams.
beforeAll(async () => {
  s = await served((req) => {
    if (req.agentNumber < 2 && isFirstStep(req))
      return call("call_subordinate", { message: `level ${req.agentNumber + 1}` });
    return { text: `A${req.agentNumber} done` };
  });
});
afterAll(async () => s.close());

const runTree = async () => {
  const id = (await api(s.url, "POST", "/v1/contexts", {})).body.id as string;
  const done = await api(s.url, "POST", `/v1/contexts/${id}/messages`, { text: "go", wait: true });
  expect(done.body.status).toBe("completed");
  return id;
};
const positionsInLog = async () => (await s.rt.events({ after: 0, limit: 100_000 })).map((e) => e.globalPosition);
const headPosition = async () => (await positionsInLog()).at(-1) ?? 0;

describe("given the event stream", () => {
  it("when a client drops mid-stream and reconnects with Last-Event-ID, then it gets every event once, in order", async () => {
    await runTree();
    const first = await sse(`${s.url}/v1/events/stream`);
    const part = await first.collect((_e, all) => all.length === 7);
    first.abort();
    const lastId = part.at(-1)!.id!;
    await runTree(); // events appended while the client is away
    const target = await headPosition();
    const second = await sse(`${s.url}/v1/events/stream`, { "last-event-id": lastId });
    const rest = await second.collect((e) => Number(e.id) === target);
    second.abort();
    const seen = [...part, ...rest].map((e) => Number(e.id));
    expect(seen).toEqual(await positionsInLog());
    expect(rest[0]!.event).toBe(JSON.parse(rest[0]!.data).type);
  });

  it("when a bad Last-Event-ID or filter is given, then the stream answers 400", async () => {
    const bad = await fetch(`${s.url}/v1/events/stream`, { headers: { "last-event-id": "soon" } });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as any).error.message).toMatch(/^Last-Event-ID: /);
    expect((await fetch(`${s.url}/v1/events/stream?contextId=x`)).status).toBe(400);
  });

  it("when 100 clients follow the stream while a tree runs, then each gets exactly the log's events in order", async () => {
    const from = await headPosition();
    const clients = await Promise.all(
      Array.from({ length: 100 }, () => sse(`${s.url}/v1/events/stream?after=${from}`)),
    );
    const id = await runTree();
    const target = await headPosition();
    const got = await Promise.all(clients.map((c) => c.collect((e) => Number(e.id) === target)));
    for (const c of clients) c.abort();
    const expected = (await positionsInLog()).filter((p) => p > from);
    expect(expected.length).toBeGreaterThan(10);
    for (const g of got) expect(g.map((e) => Number(e.id))).toEqual(expected);
    // One context's stream only carries that context's events.
    const one = await sse(`${s.url}/v1/events/stream?contextId=${id}`);
    const own = await one.collect((e) => e.event === "RunCompleted");
    one.abort();
    expect(new Set(own.map((e) => JSON.parse(e.data).streamId))).toEqual(new Set([id]));
  });

  it("when a live client stops taking events, then runs still finish and the hub cuts that client off instead of buffering forever", async () => {
    const hub = await EventHub.open(s.rt, { maxQueue: 5, stallMs: 60_000 });
    try {
      const start = await headPosition();
      const lagging = hub.join(start);
      const reader = hub.join(start);
      // The lagging client takes one event, then never asks again: it is live, so events queue up for it.
      const first = lagging.next();
      // The reader keeps up: it reads until both trees' six runs have completed.
      const read = (async () => {
        const out: number[] = [];
        for (let completed = 0; completed < 6;) {
          const e = await reader.next();
          if (!e) break;
          if (isLiveDelta(e)) continue;
          out.push(e.globalPosition);
          if (e.type === "RunCompleted") completed++;
        }
        return out;
      })();
      // A real HTTP client that never reads its body, beside the hub's lagging member.
      const idle = await fetch(`${s.url}/v1/events/stream`);
      await runTree();
      await runTree();
      expect(await first).not.toBeNull();
      expect(lagging.endReason).toBe("overflow");
      expect(await lagging.next()).toBeNull();
      expect(await read).toEqual((await positionsInLog()).filter((p) => p > start));
      expect(reader.endReason).toBeNull();
      await idle.body?.cancel();
    } finally {
      hub.close();
    }
  });

  it("when a client starts far back, then it holds one backlog page at a time, never more than its queue limit", async () => {
    await runTree();
    const hub = await EventHub.open(s.rt, { maxQueue: 5 });
    try {
      const expected = await positionsInLog();
      expect(expected.length).toBeGreaterThan(20);
      const client = hub.join(0);
      const got: number[] = [];
      let most = 0;
      while (got.length < expected.length) {
        const e = await client.next();
        if (!e) break;
        if (isLiveDelta(e)) continue;
        got.push(e.globalPosition);
        most = Math.max(most, client.held);
      }
      expect(got).toEqual(expected);
      expect(most).toBeLessThan(5);
      expect(client.endReason).toBeNull();
    } finally {
      hub.close();
    }
  });

  it("when a client takes no event for the stall time, then it is cut off as stalled, while a client waiting for events is not", async () => {
    const hub = await EventHub.open(s.rt, { stallMs: 100 });
    try {
      const head = await headPosition();
      const stalled = hub.join(0);
      const waiting = hub.join(head);
      const next = waiting.next(); // nothing after the head yet: it waits, which is no stall
      expect(await stalled.ended).toBe("stalled");
      expect(await stalled.next()).toBeNull();
      expect(waiting.endReason).toBeNull();
      await runTree();
      expect(await next).not.toBeNull();
    } finally {
      hub.close();
    }
  });
});
