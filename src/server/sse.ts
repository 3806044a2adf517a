// One Server-Sent Events response: each event of the log as `id: <global position>`, `event: <type>`, `data: <json>`.
// Requirements: the id is the global position, so a client reconnecting with Last-Event-ID resumes exactly there;
// a live model delta goes as `event: ModelDelta` with no id, so it never moves the client's resume point;
// a comment line every 15 s keeps proxies from closing an idle stream; a client cut off for lagging is told why;
// one cut off for not draining has its connection destroyed (nothing more can reach it, and a graceful end would
// wait behind the bytes it is not reading), freeing what the connection holds. Events already in memory (a backlog
// page) go out as one write: one write per event left 100 far-behind streams' server about 100-190 MB above
// idle in RSS (allocator churn of small buffers), one per page about 20 MB.
import type { ServerResponse } from "node:http";
import type { Context } from "hono";
import { streamSSE } from "hono/streaming";
import { isLiveDelta, type LiveEvent } from "../runtime/liveDeltas.ts";
import type { HubClient } from "./eventHub.ts";

const HEARTBEAT_MS = 15_000;
/** Events already in memory go out together, up to about this many characters a write: fewer, larger writes. */
const WRITE_CHARS = 64 * 1024;

/** One event as SSE text (JSON has no raw newline, so `data` is one line); a delta has no id. */
const frame = (e: LiveEvent): string =>
  isLiveDelta(e)
    ? `event: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`
    : `event: ${e.type}\ndata: ${JSON.stringify(e)}\nid: ${e.globalPosition}\n\n`;

export const eventStream = (c: Context, client: HubClient): Response =>
  streamSSE(c, async (stream) => {
    stream.onAbort(() => client.close());
    void client.ended.then((reason) => {
      if (reason !== "stalled") return;
      // The Node adapter hands the response in env; elsewhere (a fetch-style host) aborting the stream is all there is.
      const outgoing = (c.env as { outgoing?: ServerResponse } | undefined)?.outgoing;
      if (outgoing) outgoing.destroy();
      else stream.abort();
    });
    const beat = setInterval(() => void stream.write(": keep-alive\n\n").catch(() => client.close()), HEARTBEAT_MS);
    try {
      await stream.write(": connected\n\n");
      for (;;) {
        const e = await client.next();
        if (e === null) break;
        let text = frame(e);
        for (
          let more = text.length < WRITE_CHARS ? client.ready() : null;
          more;
          more = text.length < WRITE_CHARS ? client.ready() : null
        )
          text += frame(more);
        await stream.write(text);
        // While the socket takes all it is given, the backlog read and the writes chain as promises alone: give
        // the event loop a turn, so a stream far behind never starves other connections (new ones get 408 then).
        await new Promise((resolve) => setImmediate(resolve));
      }
      if (client.endReason === "overflow") {
        await stream.writeSSE({
          event: "overflow",
          data: JSON.stringify({ message: "this client fell too far behind; reconnect with Last-Event-ID to resume" }),
        });
      }
    } finally {
      clearInterval(beat);
      client.close();
    }
  });
