// The budget of one delegation tree, folded from its stream `<rootContextId>:budget`: limits, spent, reserved.
//
// Requirements:
// - Pure and idempotent: a fact at or below the folded version changes nothing; a reservation is counted once
//   (a second BudgetReserved with its id is ignored), a settle only settles a reservation still open.
// - Spent is what settled calls really used; reserved is what open reservations hold. A call fits when, for
//   every limit, spent + reserved + asked stays within it (wall clock: the time since the budget was set).
// - `totalTokens` is input plus output; `costUsd` comes from the preset's price.
import type { BudgetAmount, BudgetLimits, RecordedEvent } from "../events/schema.ts";

export type BudgetKey = keyof BudgetLimits;
export const BUDGET_KEYS: readonly BudgetKey[] = ["inputTokens", "outputTokens", "totalTokens", "costUsd", "modelCalls", "toolCalls", "wallClockMs"];

export type BudgetState = {
  rootContextId: string | null;
  /** Null while the tree has no budget. */
  limits: BudgetLimits | null;
  spent: BudgetAmount;
  /** Open reservations by id. */
  open: Readonly<Record<string, BudgetAmount>>;
  reserved: BudgetAmount;
  /** When the budget was first set (ISO time), the start of its wall clock. */
  since: string | null;
  /** The stream version folded: the expected version of the next conditional append. */
  version: number;
};

/** The stream a tree's budget facts live in. */
export const BUDGET_STREAM_SUFFIX = ":budget";
export const budgetStreamOf = (rootContextId: string): string => `${rootContextId}${BUDGET_STREAM_SUFFIX}`;

/** An amount with its `totalTokens` (input plus output), as reports show it. */
export type BudgetFigures = BudgetAmount & { totalTokens: number };
export const withTotal = (a: BudgetAmount): BudgetFigures => ({ ...a, totalTokens: a.inputTokens + a.outputTokens });

/** A tree's budget as reports show it (`rt.budget`, the audit, the page): null limits when it has none. */
export type TreeBudget = { rootContextId: string; limits: BudgetLimits | null; spent: BudgetFigures; reserved: BudgetFigures };
export const treeBudgetOf = (rootContextId: string, s: BudgetState): TreeBudget => ({ rootContextId, limits: s.limits, spent: withTotal(s.spent), reserved: withTotal(s.reserved) });

export const ZERO: BudgetAmount = { inputTokens: 0, outputTokens: 0, costUsd: 0, modelCalls: 0, toolCalls: 0 };

export const initBudget = (): BudgetState => ({ rootContextId: null, limits: null, spent: ZERO, open: {}, reserved: ZERO, since: null, version: 0 });

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

export const evolveBudget = (s: BudgetState, e: RecordedEvent): BudgetState => {
  if (e.streamVersion <= s.version) return s;
  const next = { ...s, version: e.streamVersion };
  switch (e.type) {
    case "BudgetSet":
      return { ...next, rootContextId: e.data.rootContextId, limits: e.data.limits, since: s.since ?? e.recordedAt };
    case "BudgetExtended":
      return { ...next, rootContextId: e.data.rootContextId, limits: addLimits(s.limits, e.data.more), since: s.since ?? e.recordedAt };
    case "BudgetReserved":
      if (s.open[e.data.reservationId]) return next;
      return { ...next, open: { ...s.open, [e.data.reservationId]: e.data.amount }, reserved: addAmounts(s.reserved, e.data.amount) };
    case "BudgetSettled": {
      const held = s.open[e.data.reservationId];
      if (!held) return next;
      const { [e.data.reservationId]: _settled, ...open } = s.open;
      return { ...next, open, reserved: addAmounts(s.reserved, held, -1), spent: addAmounts(s.spent, e.data.spent) };
    }
    default:
      return next;
  }
};

export const foldBudget = (events: readonly RecordedEvent[], from: BudgetState = initBudget()): BudgetState => events.reduce(evolveBudget, from);

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
