// Budgets on the command line: the `key=value,…` syntax of `run --budget` and `extend-budget`, and the line
// that shows a tree's budget and spend (tree, audit, contexts).
//
// Requirements:
// - `totalTokens=20000,costUsd=0.5`: each key one of the budget keys, given once; counts are whole numbers ≥ 0
//   (`_` may group digits), `costUsd` a decimal ≥ 0. A bad pair is one line naming the flag and the key.
// - The shown line lists each limit with what the tree spent against it, then what open calls hold.
import { z } from "zod";
import type { BudgetLimits } from "../events/schema.ts";
import { amountOf, BUDGET_KEYS, type BudgetKey, type TreeBudget } from "../projections/budget.ts";
import type { Paint } from "./ansi.ts";
import { count } from "./format.ts";

export const BUDGET_SYNTAX = "key=value pairs separated by commas, e.g. totalTokens=20000,costUsd=0.5";

/** Parses `text` as budget limits, or says (one line, starting with `flag`) what is wrong with it. */
export const parseBudget = (flag: string, text: string): BudgetLimits | string => {
  const out: BudgetLimits = {};
  const pairs = text.split(",").map((p) => p.trim());
  if (text.trim() === "" || pairs.some((p) => p === "")) return `${flag} takes ${BUDGET_SYNTAX}`;
  for (const pair of pairs) {
    const eq = pair.indexOf("=");
    if (eq < 0) return `${flag}: '${pair}' is not key=value (${BUDGET_SYNTAX})`;
    const key = pair.slice(0, eq).trim();
    const raw = pair
      .slice(eq + 1)
      .trim()
      .replaceAll("_", "");
    if (!(BUDGET_KEYS as readonly string[]).includes(key))
      return `${flag}: unknown key '${key}' (keys: ${BUDGET_KEYS.join(", ")})`;
    const k = key as BudgetKey;
    if (out[k] !== undefined) return `${flag}: ${k} is given twice`;
    if (k === "costUsd") {
      if (!/^\d+(\.\d+)?$/.test(raw))
        return `${flag}: costUsd takes US dollars, a number 0 or more such as 0.5 (got '${pair.slice(eq + 1).trim()}')`;
      out[k] = Number(raw);
    } else {
      if (!/^\d+$/.test(raw) || !Number.isSafeInteger(Number(raw)))
        return `${flag}: ${k} takes a whole number, 0 or more (got '${pair.slice(eq + 1).trim()}')`;
      out[k] = Number(raw);
    }
  }
  return out;
};

/** A flag's value checked as budget limits (a usage error naming the flag and key otherwise). */
export const budgetFlag = (flag: string) =>
  z.string().transform((text, ctx): BudgetLimits => {
    const r = parseBudget(flag, text);
    if (typeof r === "string") {
      ctx.addIssue({ code: "custom", message: r });
      return z.NEVER;
    }
    return r;
  });

/** Limits in the flag syntax (`totalTokens=20000,costUsd=0.5`). */
export const budgetArg = (limits: BudgetLimits): string =>
  BUDGET_KEYS.filter((k) => limits[k] !== undefined)
    .map((k) => `${k}=${limits[k]}`)
    .join(",");

const money = (n: number): string => `$${n < 1 ? n.toFixed(4).replace(/0+$/, "").replace(/\.$/, "") : n.toFixed(2)}`;
const figure = (k: BudgetKey, n: number): string => (k === "costUsd" ? money(n) : count(n));

/** `budget: totalTokens 1,234 of 20,000 · modelCalls 3 of 40 · reserved 4,196 tokens`, or `budget: none`. */
export const budgetLine = (b: TreeBudget | null | undefined, paint: Paint): string => {
  if (!b || b.limits === null) return `budget: ${paint.dim("none")}`;
  const limits = b.limits;
  const parts = BUDGET_KEYS.filter((k) => limits[k] !== undefined).map((k) => {
    const limit = limits[k]!;
    if (k === "wallClockMs") return `wallClockMs ${count(limit)}`;
    const used = amountOf(b.spent, k);
    const text = `${k} ${figure(k, used)} of ${figure(k, limit)}`;
    return used + amountOf(b.reserved, k) >= limit ? paint.yellow(text) : text;
  });
  const held =
    b.reserved.totalTokens > 0 || b.reserved.modelCalls > 0
      ? ` · reserved ${count(b.reserved.totalTokens)} tokens by ${b.reserved.modelCalls} open call${b.reserved.modelCalls === 1 ? "" : "s"}`
      : "";
  return `budget: ${parts.join(" · ")}${held}`;
};

/** An example of the command that lets runs parked on `limit` go on (the amount is the user's to choose). */
export const extendHint = (rootId: string, limit: string): string =>
  `actorzero extend-budget ${rootId.slice(0, 8)} ${limit}=${limit === "costUsd" ? "0.5" : limit === "modelCalls" || limit === "toolCalls" ? "20" : limit === "wallClockMs" ? "600000" : "20000"}`;
