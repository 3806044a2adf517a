// One Server-Sent Events response: each event of the log as `id: <global position>`, `event: <type>`, `data: <json>`.
// Requirements: the id is the global position, so a client reconnecting with Last-Event-ID resumes exactly there;
// a live model delta goes as `event: ModelDelta` with no id, so it never moves the client's resume point;
// a comment line every 15 s keeps proxies from closing an idle stream; a client cut off for lagging is told why;
// one cut off for not draining has its connection destroyed (nothing more can reach it, and a graceful end would
// wait behind the bytes it is not reading), freeing what the connection holds.
import type { ServerResponse } from "node:http";
import type { Context } from "hono";
import { streamSSE } from "hono/streaming";
import { isLiveDelta } from "../runtime/liveDeltas.ts";
import type { HubClient } from "./eventHub.ts";

const HEARTBEAT_MS = 15_000;

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
        if (isLiveDelta(e)) await stream.writeSSE({ event: e.type, data: JSON.stringify(e) });
        else await stream.writeSSE({ id: String(e.globalPosition), event: e.type, data: JSON.stringify(e) });
      }
      if (client.endReason === "overflow") {
        await stream.writeSSE({ event: "overflow", data: JSON.stringify({ message: "this client fell too far behind; reconnect with Last-Event-ID to resume" }) });
      }
    } finally {
      clearInterval(beat);
      client.close();
    }
  });
