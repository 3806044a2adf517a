// The budget of one delegation tree, folded from its stream `<rootContextId>:budget`: limits, spent, reserved.
//
// Requirements:
// - Pure and idempotent: a fact at or below the folded version changes nothing; a reservation is counted once
//   (a second BudgetReserved with its id is ignored), a settle of a reservation the log holds only settles it
//   while it is open.
// - On a log with one writer a reservation is held in that process's memory only (runtime/budgetLedger.ts,
//   `hold`): the log then has the settle alone (a reply's `settles`, a BudgetSettled for a call cut off), and a
//   settle of a reservation the log never held is spent as it stands. The replies of such a tree are found by
//   walking it from its root (SubordinateCalled names each child) the first time it is read.
// - A reservation is settled by the ModelReplied that carries its id (`settles`, in the calling context's stream:
//   no append of its own), or by a BudgetSettled (a call with no reply, one cut off, an older log). Both are
//   folded in log order (`readBudget`): whichever comes first settles it, the other changes nothing.
// - Spent is what settled calls really used; reserved is what open reservations hold. A call fits when, for
//   every limit, spent + reserved + asked stays within it (wall clock: the time since the budget was set).
// - A root created with a budget carries its first limits on its ContextCreated (`budget`, in the root's stream: no
//   append of its own); a BudgetSet after it replaces them, as one on the budget stream would.
// - `totalTokens` is input plus output; `costUsd` comes from the preset's price.
import type { BudgetAmount, BudgetLimits, DataOf, RecordedEvent } from "../events/schema.ts";
import type { EventStore } from "../events/store.ts";

export type BudgetKey = keyof BudgetLimits;
export const BUDGET_KEYS: readonly BudgetKey[] = [
  "inputTokens",
  "outputTokens",
  "totalTokens",
  "costUsd",
  "modelCalls",
  "toolCalls",
  "wallClockMs",
];

export type BudgetState = {
  rootContextId: string | null;
  /** Null while the tree has no budget. */
  limits: BudgetLimits | null;
  spent: BudgetAmount;
  /** Open reservations by id. */
  open: Readonly<Record<string, BudgetAmount>>;
  /** The context each open reservation was made for (whose stream holds the reply that settles it). */
  openIn: Readonly<Record<string, string>>;
  reserved: BudgetAmount;
  /** When the budget was first set (ISO time), the start of its wall clock. */
  since: string | null;
  /** The stream version folded: the expected version of the next conditional append. */
  version: number;
  /** The root's ContextCreated was read (it may carry the first limits): a refresh need not read it again. */
  rootRead: boolean;
  /** The reservations the log holds (BudgetReserved), open or settled: a second settle of one changes nothing. */
  logged: Readonly<Record<string, true>>;
};

/** The stream a tree's budget facts live in. */
export const BUDGET_STREAM_SUFFIX = ":budget";
export const budgetStreamOf = (rootContextId: string): string => `${rootContextId}${BUDGET_STREAM_SUFFIX}`;

/** An amount with its `totalTokens` (input plus output), as reports show it. */
export type BudgetFigures = BudgetAmount & { totalTokens: number };
export const withTotal = (a: BudgetAmount): BudgetFigures => ({ ...a, totalTokens: a.inputTokens + a.outputTokens });

/** A tree's budget as reports show it (`rt.budget`, the audit, the page): null limits when it has none. */
export type TreeBudget = {
  rootContextId: string;
  limits: BudgetLimits | null;
  spent: BudgetFigures;
  reserved: BudgetFigures;
};
export const treeBudgetOf = (rootContextId: string, s: BudgetState): TreeBudget => ({
  rootContextId,
  limits: s.limits,
  spent: withTotal(s.spent),
  reserved: withTotal(s.reserved),
});

export const ZERO: BudgetAmount = { inputTokens: 0, outputTokens: 0, costUsd: 0, modelCalls: 0, toolCalls: 0 };

export const initBudget = (): BudgetState => ({
  rootContextId: null,
  limits: null,
  spent: ZERO,
  open: {},
  openIn: {},
  reserved: ZERO,
  since: null,
  version: 0,
  rootRead: false,
  logged: {},
});

export const addAmounts = (a: BudgetAmount, b: BudgetAmount, sign = 1): BudgetAmount => ({
  inputTokens: a.inputTokens + sign * b.inputTokens,
  outputTokens: a.outputTokens + sign * b.outputTokens,
  // Rounded to a nano-dollar so sums of many small prices do not drift in floating point.
  costUsd: Math.max(0, Math.round((a.costUsd + sign * b.costUsd) * 1e9) / 1e9),
  modelCalls: a.modelCalls + sign * b.modelCalls,
  toolCalls: a.toolCalls + sign * b.toolCalls,
});

/** Each key of `more` added to `limits` (a key without a limit gets `more`'s). */
export const addLimits = (limits: BudgetLimits | null, more: BudgetLimits): BudgetLimits => {
  const out: BudgetLimits = { ...(limits ?? {}) };
  for (const k of BUDGET_KEYS) {
    const m = more[k];
    if (m !== undefined) out[k] = (out[k] ?? 0) + m;
  }
  return out;
};

/** The amount of one budget key (wall clock is not an amount: it is measured, see `fitOf`). */
export const amountOf = (a: BudgetAmount, key: Exclude<BudgetKey, "wallClockMs">): number =>
  key === "totalTokens" ? a.inputTokens + a.outputTokens : a[key];

/**
 * The reservation replaced by what it spent. One the log holds that is no longer open stays as it was; one the log
 * never held (a single writer's, held in its memory: see `holdBudget`) is spent as it stands.
 */
export const settleBudget = (s: BudgetState, reservationId: string, spent: BudgetAmount): BudgetState => {
  const held = s.open[reservationId];
  if (!held) return s.logged[reservationId] ? s : { ...s, spent: addAmounts(s.spent, spent) };
  const { [reservationId]: _settled, ...open } = s.open;
  const { [reservationId]: _in, ...openIn } = s.openIn;
  return { ...s, open, openIn, reserved: addAmounts(s.reserved, held, -1), spent: addAmounts(s.spent, spent) };
};

export const evolveBudget = (s: BudgetState, e: RecordedEvent): BudgetState => {
  // A reply is in its context's stream: it settles, but is no step of the budget stream's version.
  if (e.type === "ModelReplied")
    return e.data.settles ? settleBudget(s, e.data.settles.reservationId, e.data.settles.spent) : s;
  // The root's creation, in its own stream: the tree's first limits when it was created with a budget.
  if (e.type === "ContextCreated") {
    if (s.rootRead || e.data.contextId !== e.data.rootContextId) return s;
    const budget = e.data.budget;
    return budget && s.limits === null
      ? { ...s, rootRead: true, rootContextId: e.data.rootContextId, limits: budget, since: e.recordedAt }
      : { ...s, rootRead: true };
  }
  if (e.streamVersion <= s.version) return s;
  const next = { ...s, version: e.streamVersion };
  switch (e.type) {
    case "BudgetSet":
      return { ...next, rootContextId: e.data.rootContextId, limits: e.data.limits, since: s.since ?? e.recordedAt };
    case "BudgetExtended":
      return {
        ...next,
        rootContextId: e.data.rootContextId,
        limits: addLimits(s.limits, e.data.more),
        since: s.since ?? e.recordedAt,
      };
    case "BudgetReserved":
      if (s.logged[e.data.reservationId]) return next;
      return { ...holdBudget(next, e.data), logged: { ...s.logged, [e.data.reservationId]: true } };
    case "BudgetSettled":
      return settleBudget(next, e.data.reservationId, e.data.spent);
    default:
      return next;
  }
};

/** A reservation opened: by its BudgetReserved, or (a single writer's) in memory alone. */
export const holdBudget = (s: BudgetState, r: DataOf<"BudgetReserved">): BudgetState =>
  s.open[r.reservationId]
    ? s
    : {
        ...s,
        open: { ...s.open, [r.reservationId]: r.amount },
        openIn: { ...s.openIn, [r.reservationId]: r.contextId },
        reserved: addAmounts(s.reserved, r.amount),
      };

export const foldBudget = (events: readonly RecordedEvent[], from: BudgetState = initBudget()): BudgetState =>
  events.reduce(evolveBudget, from);

/**
 * `from` brought up to the log (up to position `until`): the budget stream's facts after it, and the replies that
 * settle its reservations, folded in one pass in log order. A reply always follows its reservation on the log (it is
 * appended after the reservation committed), on every store. A later read takes the replies of the reservations
 * open then (from their contexts' streams); the first read of a budgeted tree also takes every reply that settles
 * a reservation the log never held, from every stream of the tree.
 */
export const readBudget = async (
  store: Pick<EventStore, "readStream">,
  rootContextId: string,
  from: BudgetState = initBudget(),
  until = Number.POSITIVE_INFINITY,
): Promise<BudgetState> => {
  const cut = (events: RecordedEvent[]) => events.filter((e) => e.globalPosition <= until);
  const first = !from.rootRead;
  // The root's ContextCreated first (it may carry the first limits): read once, with its stream.
  const rootStream = first ? cut(await store.readStream(rootContextId)) : [];
  const created = rootStream.slice(0, 1).filter((e) => e.type === "ContextCreated");
  const facts = [...created, ...cut(await store.readStream(budgetStreamOf(rootContextId), from.version + 1))];
  const reserved = foldBudget(facts, from);
  const streams = new Map<string, RecordedEvent[]>();
  if (first && reserved.limits !== null) await walkTree(store, rootContextId, rootStream, streams, cut);
  for (const contextId of new Set(Object.values(reserved.openIn)))
    if (!streams.has(contextId)) streams.set(contextId, cut(await store.readStream(contextId)));
  const replies: RecordedEvent[] = [];
  for (const events of streams.values())
    for (const e of events) {
      if (e.type !== "ModelReplied" || !e.data.settles) continue;
      const id = e.data.settles.reservationId;
      if (reserved.open[id] || (first && !reserved.logged[id])) replies.push(e);
    }
  const done = replies.length === 0 ? reserved : foldBudget([...facts, ...replies].sort(byPosition), from);
  return { ...done, rootRead: true };
};

const byPosition = (a: RecordedEvent, b: RecordedEvent) => a.globalPosition - b.globalPosition;

/** Every stream of the tree under the root (each child named by a SubordinateCalled of its parent), read once. */
const walkTree = async (
  store: Pick<EventStore, "readStream">,
  rootContextId: string,
  rootStream: RecordedEvent[],
  streams: Map<string, RecordedEvent[]>,
  cut: (events: RecordedEvent[]) => RecordedEvent[],
): Promise<void> => {
  streams.set(rootContextId, rootStream);
  const pending = [rootStream];
  for (let events = pending.pop(); events; events = pending.pop()) {
    for (const e of events) {
      if (e.type !== "SubordinateCalled" || streams.has(e.data.childContextId)) continue;
      const child = cut(await store.readStream(e.data.childContextId));
      streams.set(e.data.childContextId, child);
      pending.push(child);
    }
  }
};

/** Why a call does not fit: the first limit it would pass. */
export type Overrun = { limit: BudgetKey; allowed: number; used: number; asked: number };

/** Null when `asked` fits what is left of the budget at `nowMs`, else the first limit it would pass. */
export const fitOf = (s: BudgetState, asked: BudgetAmount, nowMs: number): Overrun | null => {
  if (!s.limits) return null;
  for (const limit of BUDGET_KEYS) {
    const allowed = s.limits[limit];
    if (allowed === undefined) continue;
    if (limit === "wallClockMs") {
      const used = s.since === null ? 0 : nowMs - Date.parse(s.since);
      if (used > allowed) return { limit, allowed, used, asked: 0 };
      continue;
    }
    const used = amountOf(s.spent, limit) + amountOf(s.reserved, limit);
    const ask = amountOf(asked, limit);
    if (used + ask > allowed + 1e-9) return { limit, allowed, used, asked: ask };
  }
  return null;
};

/** A per-message budget as absolute limits: each key added to what the tree has spent and holds now. */
export const limitsFrom = (s: BudgetState, budget: BudgetLimits, nowMs: number): BudgetLimits => {
  const out: BudgetLimits = { ...(s.limits ?? {}) };
  const held = addAmounts(s.spent, s.reserved);
  for (const k of BUDGET_KEYS) {
    const b = budget[k];
    if (b === undefined) continue;
    out[k] = k === "wallClockMs" ? (s.since === null ? 0 : nowMs - Date.parse(s.since)) + b : amountOf(held, k) + b;
  }
  return out;
};
