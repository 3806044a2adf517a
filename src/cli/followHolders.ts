// `events --follow` on a PGlite data dir, as `tail -f` follows a file: it follows whichever process holds the dir
// (through its control socket) and, between holders, waits holding nothing, so the next `run` can take the dir.
//
// Requirements:
// - Never holds the data dir while it waits: it only polls the control socket (a `run` that found the dir
//   locked by a follower would fail).
// - Each holder is followed from the last position printed, so what was appended while no one was followed
//   (a holder that came and went between two polls) is printed once the next holder answers, in order, once.
// - Ends only on Ctrl-C/SIGTERM (`signal`) or when `onEvent` says it has printed enough.
import { setTimeout as sleep } from "node:timers/promises";
import type { RecordedEvent } from "../events/schema.ts";
import { reach, type Holder } from "./holder.ts";

/** How often a waiting follower looks for a process answering on the data dir's socket. */
const POLL_MS = 200;

export type FollowOptions = {
  dataDir: string;
  /** The holder the command already reached; null when no process held the dir. */
  first: Holder | null;
  /** The last log position printed so far (a holder is followed from there). */
  after: () => number;
  /** Prints one event; false once enough are printed (--limit). */
  onEvent: (e: RecordedEvent) => boolean;
  /** A note for the user (stderr): a holder came or went. */
  note: (line: string) => void;
  signal: AbortSignal;
};

export const followHolders = async (o: FollowOptions): Promise<void> => {
  let holder = o.first;
  for (;;) {
    if (holder === null) {
      holder = await nextHolder(o.dataDir, o.signal);
      if (holder === null) return;
      o.note(`actorzero: a process holds the data dir again; following it after position ${o.after()}`);
    }
    if ((await followOne(holder, o)) === "stopped") return;
    o.note("actorzero: the process holding the data dir closed it; waiting for the next one (Ctrl-C stops)");
    holder = null;
    // A holder that is closing may still answer for a moment: let it go first.
    await sleep(POLL_MS, undefined, { signal: o.signal }).catch(() => undefined);
  }
};

/** Polls the socket until a holder answers; null once `signal` aborts. */
const nextHolder = async (dataDir: string, signal: AbortSignal): Promise<Holder | null> => {
  while (!signal.aborted) {
    const holder = await reach(dataDir);
    if (holder !== null) return holder;
    await sleep(POLL_MS, undefined, { signal }).catch(() => undefined);
  }
  return null;
};

/** Follows one holder until it goes away ("left") or the command ends ("stopped"). */
const followOne = (holder: Holder, o: FollowOptions): Promise<"stopped" | "left"> =>
  new Promise((resolve) => {
    if (o.signal.aborted) return resolve("stopped");
    let over = false;
    const finish = (how: "stopped" | "left") => {
      if (over) return;
      over = true;
      o.signal.removeEventListener("abort", onAbort);
      live.close();
      resolve(how);
    };
    const onAbort = () => finish("stopped");
    const live = holder.follow(o.after(), (e) => {
      if (!over && !o.onEvent(e)) finish("stopped");
    });
    o.signal.addEventListener("abort", onAbort, { once: true });
    void live.ended.then(() => finish("left"));
  });
