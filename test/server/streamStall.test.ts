// A stream whose client stops reading, over real HTTP: the server cuts it after the stall time, and the client
// resumes with Last-Event-ID and gets exactly the events it missed.
import http from "node:http";
import type { Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { api, served, sse, type Served } from "./support.ts";

let s: Served;
// Big messages, so the log is a few MB: more than the socket buffers between server and client can hold.
const BIG = "x".repeat(48_000);
const RUNS = 80;

beforeAll(async () => {
  s = await served(() => ({ text: `echo ${BIG}` }), { streamStallMs: 300 });
  for (let i = 0; i < RUNS; i++) {
    const id = (await api(s.url, "POST", "/v1/contexts", {})).body.id as string;
    const done = await api(s.url, "POST", `/v1/contexts/${id}/messages`, { text: `${i} ${BIG}`, wait: true });
    expect(done.body.status).toBe("completed");
  }
});
afterAll(async () => s.close());

const positionsInLog = async () => (await s.rt.events({ after: 0 })).map((e) => e.globalPosition);

/** Complete SSE events' ids in `text` (a block cut off by the connection's end is not an event). */
const idsIn = (text: string): number[] =>
  text
    .split("\n\n")
    .slice(0, -1)
    .map((block) => /^id: (\d+)$/m.exec(block)?.[1])
    .filter((id): id is string => id !== undefined)
    .map(Number);

describe("given a stream whose client does not read", () => {
  it("when it has not drained for the stall time, then the server cuts it, and Last-Event-ID resumes with no gap and no duplicate", async () => {
    const positions = await positionsInLog();
    const head = positions.at(-1)!;
    // A client waiting at the head for new events takes nothing for longer than the stall time, and stays.
    const waiting = await sse(`${s.url}/v1/events/stream?after=${head}`);

    const serverSide = new Promise<Socket>((resolve) => s.server.server.once("connection", resolve));
    const req = http.get(`${s.url}/v1/events/stream`);
    const res = await new Promise<http.IncomingMessage>((resolve, reject) =>
      req.once("response", resolve).once("error", reject),
    );
    expect(res.statusCode).toBe(200);
    // The response is left paused: Node's client stops reading the socket once its small buffer is full.
    const socket = await serverSide;
    await new Promise<void>((resolve) => socket.once("close", () => resolve()));

    // Cut: what reached the client before the cut is all it gets on this connection.
    let text = "";
    res.setEncoding("utf8");
    res.on("data", (chunk: string) => (text += chunk));
    await new Promise<void>((resolve) => res.once("close", () => resolve()));
    req.destroy();
    const first = idsIn(text);
    expect(first.at(-1) ?? 0).toBeLessThan(head);

    const resumed = await sse(`${s.url}/v1/events/stream`, { "last-event-id": String(first.at(-1) ?? 0) });
    const rest = await resumed.collect((e) => Number(e.id) === head);
    resumed.abort();
    expect([...first, ...rest.map((e) => Number(e.id))]).toEqual(positions);

    // The waiting client was not cut: it gets the next run's events.
    const id = (await api(s.url, "POST", "/v1/contexts", {})).body.id as string;
    await api(s.url, "POST", `/v1/contexts/${id}/messages`, { text: "one more", wait: true });
    const next = await waiting.next();
    waiting.abort();
    expect(Number(next?.id)).toBe(head + 1);
  });
});
