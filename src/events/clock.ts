// Time and fresh ids come in through this port, so rules stay pure and tests can fix them.
import { randomUUID } from "node:crypto";

export type Clock = {
  now(): Date;
  uuid(): string;
  /** Waits `ms` (the approval timeout's wait); rejects when `signal` aborts. A test clock can let time pass at will. */
  sleep?(ms: number, signal: AbortSignal): Promise<void>;
};

export const systemClock: Clock = { now: () => new Date(), uuid: () => randomUUID() };
