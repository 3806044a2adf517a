// Drives one run for `run` and `send`: shows it live (tree on a terminal, else a line per event), stops it on Ctrl-C.
//
// Requirements:
// - Every event appended from the start of the command is shown, in log order, none skipped.
// - The first Ctrl-C (or SIGTERM) stops the whole tree through `rt.stop(root)`, so every run is recorded
//   as stopped and nothing is lost; a second one (a second press, not a relayed copy of the first) exits at once.
// - The screen is given back (cursor shown, handlers removed) on every path.
import type { EventStore } from "../events/store.ts";
import type { Runtime, SendResult } from "../runtime/runtime.ts";
import { isLiveDelta } from "../runtime/liveDeltas.ts";
import { ESC } from "./ansi.ts";
import type { Io } from "./context.ts";
import { eventJson, eventLine } from "./eventLine.ts";
import { LiveState } from "./liveState.ts";
import { LiveView } from "./liveView.ts";
import { EVENT_INDENT, screenWidth, wrapText } from "./screen.ts";

export type ShowMode = "live" | "lines" | "json-lines" | "quiet";

/** `after`: the log position the session started from; runs begun after it are this session's. */
export type Session = { result: SendResult; interrupted: boolean; after: number };

/** What a session needs of the runtime: a local one, or the one in the process that holds the data dir. */
export type SessionRuntime = Pick<Runtime, "contexts" | "subscribe" | "stop">;

/** Signals this close to the first are copies of the same Ctrl-C (relayed by npm), not the second press. */
const SAME_PRESS_MS = 1000;

export const runSession = async (opts: {
  rt: SessionRuntime;
  store: Pick<EventStore, "headPosition">;
  rootId: string;
  /** Show events after this position (the head before the command appended anything). */
  after: number;
  mode: ShowMode;
  io: Io;
  start: () => Promise<SendResult>;
}): Promise<Session> => {
  const { rt, store, rootId, io, mode } = opts;
  const state = new LiveState();
  state.seed(await rt.contexts());
  state.position = opts.after;
  const width = screenWidth(io.out);
  const view = mode === "live" ? new LiveView(io.out, state, rootId, io.paint) : null;
  const unsubscribe = await rt.subscribe(
    (e) => {
      // Live deltas (the tree only asks for them): the running agent's text as it streams, never a line of the log.
      if (isLiveDelta(e)) return state.applyDelta(e);
      state.apply(e);
      if (mode === "lines") io.print(wrapText(eventLine(e, state.label(e.streamId), io.paint), width, EVENT_INDENT));
      if (mode === "json-lines") io.print(eventJson(e));
    },
    { after: opts.after, deltas: mode === "live" } as { after: number; deltas: true },
  );

  let interrupted = false;
  let stopping: Promise<unknown> | null = null;
  let firstAt = 0;
  const onSignal = () => {
    // One Ctrl-C can arrive more than once: the terminal signals the whole process group, and `npm start` (like
    // npm exec) forwards the signal to its child as well. A repeat within a moment is that copy, not a second press.
    if (stopping && Date.now() - firstAt < SAME_PRESS_MS) return;
    if (stopping) {
      if (view) io.out.write(ESC.showCursor);
      io.warn("actorzero: exiting at once; runs still going will be marked interrupted when the log is next opened.");
      process.exit(130);
    }
    interrupted = true;
    firstAt = Date.now();
    const note = "stopping the whole tree… (Ctrl-C again exits at once)";
    if (view) view.footer(note);
    else if (mode !== "json-lines") io.warn(`actorzero: ${note}`);
    stopping = rt.stop(rootId).catch((e: unknown) => io.warn(`actorzero: the stop failed: ${(e as Error).message}`));
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  view?.start();
  try {
    const result = await opts.start();
    if (stopping) await stopping;
    await drain(store, state);
    return { result, interrupted, after: opts.after };
  } finally {
    unsubscribe();
    view?.stop();
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
  }
};

/** Waits (briefly) until every event appended so far has been shown. */
const drain = async (store: Pick<EventStore, "headPosition">, state: LiveState) => {
  const head = await store.headPosition();
  const deadline = Date.now() + 5_000;
  while (state.position < head && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
};
