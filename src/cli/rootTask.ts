// What a root was asked: the text of its first message, read from its stream, so several runs tell apart.
import type { LogReads } from "../events/store.ts";

/** The first message a context received, or null before it got one. */
export const firstMessage = async (store: LogReads, contextId: string): Promise<string | null> => {
  for (const e of await store.readStream(contextId)) if (e.type === "MessageReceived") return e.data.text;
  return null;
};

/** `text` on one line, cut to `max` characters with `…`. */
export const shortTask = (text: string | null, max: number): string => {
  if (text === null) return "–";
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
};
