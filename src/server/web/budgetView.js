// The budget of the selected context's tree: the line that shows it (from the audit report, so the past shows the
// budget as it stood then) and the `key=value,…` the Extend form takes (the syntax of `actorzero extend-budget`).

const KEYS = ["inputTokens", "outputTokens", "totalTokens", "costUsd", "modelCalls", "toolCalls", "wallClockMs"];

const figure = (key, n) =>
  key === "costUsd" ? `$${n < 1 ? String(Number(n.toFixed(4))) : n.toFixed(2)}` : n.toLocaleString("en-US");
const used = (amount, key) => (key === "totalTokens" ? amount.inputTokens + amount.outputTokens : amount[key]);

/** `Budget of its tree: totalTokens 2,038 of 26,000 · …`, or that it has none. */
export const budgetText = (b) => {
  if (!b || !b.limits) return "No budget on its tree";
  const parts = KEYS.filter((k) => b.limits[k] !== undefined).map((k) =>
    k === "wallClockMs"
      ? `wallClockMs ${figure(k, b.limits[k])}`
      : `${k} ${figure(k, used(b.spent, k))} of ${figure(k, b.limits[k])}`,
  );
  const held =
    b.reserved.modelCalls > 0
      ? ` · ${b.reserved.modelCalls} call${b.reserved.modelCalls === 1 ? "" : "s"} reserving ${figure("totalTokens", used(b.reserved, "totalTokens"))} tokens`
      : "";
  return `Budget of its tree: ${parts.join(" · ")}${held}`;
};

/** The limits `text` adds (`totalTokens=20000,costUsd=0.5`), or a one-line reason it is not that. The server checks the keys and values again. */
export const parseBudget = (text) => {
  const out = {};
  const pairs = text.split(",").map((p) => p.trim());
  if (text.trim() === "" || pairs.some((p) => p === ""))
    return "budget: give key=value pairs separated by commas, e.g. totalTokens=20000,costUsd=0.5";
  for (const pair of pairs) {
    const eq = pair.indexOf("=");
    if (eq < 0) return `budget: '${pair}' is not key=value`;
    const key = pair.slice(0, eq).trim();
    const raw = pair
      .slice(eq + 1)
      .trim()
      .replaceAll("_", "");
    if (!KEYS.includes(key)) return `budget: unknown key '${key}' (keys: ${KEYS.join(", ")})`;
    if (!/^\d+(\.\d+)?$/.test(raw))
      return `budget: ${key} takes a number, 0 or more (got '${pair.slice(eq + 1).trim()}')`;
    out[key] = Number(raw);
  }
  return out;
};
