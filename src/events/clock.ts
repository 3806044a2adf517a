// Time and fresh ids come in through this port, so rules stay pure and tests can fix them.
import { randomUUID } from "node:crypto";

export type Clock = { now(): Date; uuid(): string };

export const systemClock: Clock = { now: () => new Date(), uuid: () => randomUUID() };
