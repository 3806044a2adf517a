// How numbers, times and texts read on the page.

export const tokens = (n) => (n >= 10_000 ? `${(n / 1000).toFixed(1)}k` : n.toLocaleString("en-US"));

export const duration = (ms) => {
  if (ms === null || ms === undefined) return "–";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const m = Math.floor(ms / 60_000);
  const s = Math.floor((ms % 60_000) / 1000);
  return m < 60
    ? `${m} m ${String(s).padStart(2, "0")} s`
    : `${Math.floor(m / 60)} h ${String(m % 60).padStart(2, "0")} m`;
};

/** A run's elapsed time: to its end, or to now while it runs. */
export const elapsed = (startedAt, endedAt, now = Date.now()) =>
  startedAt === null ? null : Math.max(0, (endedAt === null ? now : Date.parse(endedAt)) - Date.parse(startedAt));

/**
 * A context's state in the words the CLI uses: `completed` for one whose last run completed (the log's `idle`),
 * `interrupted` for a run cut short, and what a running one waits on.
 */
export const statusWord = (r) => {
  if (r.status === "running")
    return r.parkedOnBudget
      ? "over budget"
      : r.awaitingApproval?.length > 0
        ? "awaiting approval"
        : r.paused
          ? "paused"
          : r.queued
            ? "queued"
            : "running";
  if (r.status === "failed") return r.failure?.reason === "interrupted" ? "interrupted" : "failed";
  if (r.status === "stopped") return "stopped";
  return r.lastRunStatus === "completed" ? "completed" : "idle";
};

export const oneLine = (text, max = 200) => {
  if (text === null || text === undefined) return "";
  const flat = String(text).replace(/\s+/g, " ").trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
};

export const json = (v) => (typeof v === "string" ? v : JSON.stringify(v));

export const clock = (iso) => (iso ? iso.slice(11, 23) : "");

/** Element helper: h("span", { class: "x" }, "text", child). */
export const h = (tag, attrs = {}, ...children) => {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  el.append(...children.filter((c) => c !== null && c !== undefined && c !== false));
  return el;
};
