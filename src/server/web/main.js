// The page: loads the tree, follows the log live, shows a context's timeline, acts on it, and reads the past.
// State lives here; the server does every fold (the tree rows, the audit), the page only asks and draws.
import { ApiError, call, follow, getToken, setToken } from "./api.js";
import { ApprovalsView } from "./approvalsView.js";
import { TimelineView } from "./timelineView.js";
import { TreeView } from "./treeView.js";
import { statusWord } from "./format.js";
import { budgetText, parseBudget } from "./budgetView.js";

const $ = (id) => document.getElementById(id);
const state = {
  head: 0,
  at: null,
  selected: null,
  timelineLoaded: null,
  stopFollow: null,
  dirty: new Set(),
  refreshTimer: 0,
  timelineTimer: 0,
  timelineChildren: new Set(),
};

const showError = (e) => {
  const text =
    e instanceof ApiError ? `${e.status ? `${e.status} ` : ""}${e.code}: ${e.message}` : String(e?.message ?? e);
  $("error-text").textContent = text;
  $("error").hidden = false;
};
const clearError = () => {
  $("error").hidden = true;
};
/** Runs an API action; its failure is shown, never swallowed. */
const attempt = async (work) => {
  try {
    const out = await work();
    return out;
  } catch (e) {
    showError(e);
    return undefined;
  }
};

const tree = new TreeView($("tree"), { onSelect: (id) => selectContext(id) });
const timeline = new TimelineView($("timeline"), $("detail"), {
  onOpenChild: (id) => tree.select(id, { focus: false }),
});

const approvals = new ApprovalsView($("approvals-pane"), $("approvals"), {
  call,
  attempt,
  locked: () => state.at !== null,
});
const APPROVAL_CHANGES = new Set([
  "ApprovalRequested",
  "ApprovalGranted",
  "ApprovalDenied",
  "RunCompleted",
  "RunStopped",
  "RunFailed",
  "RunInterrupted",
]);

const setConn = (text, cls = "") => {
  $("conn").textContent = text;
  $("conn").className = `conn ${cls}`;
};

const updateCount = () => {
  $("tree-count").textContent = `${tree.rows.size} context${tree.rows.size === 1 ? "" : "s"}`;
};

const setHead = (head) => {
  state.head = Math.max(state.head, head);
  const slider = $("at");
  slider.max = String(state.head);
  if (state.at === null) slider.value = String(state.head);
};

const loadTree = async () => {
  const path = state.at === null ? "/v1/tree" : `/v1/tree?at=${state.at}`;
  const data = await call("GET", path);
  tree.clock = data.recordedAt ? Date.parse(data.recordedAt) : null;
  tree.setRows(data.rows);
  setHead(data.head);
  updateCount();
  document.body.dataset.position = String(data.position);
  return data;
};

// ---- the selected context: header, actions, timeline ----
const refreshTimeline = async () => {
  const id = state.selected;
  if (!id) return;
  const at = state.at === null ? "" : `&at=${state.at}`;
  const report = await attempt(() => call("GET", `/v1/contexts/${id}/audit?children=summary${at}`));
  if (!report || id !== state.selected) return;
  const c = report.context;
  state.timelineChildren = new Set(c.children.map((k) => k.id));
  const task = tree.rows.get(id)?.task;
  $("ctx-title").textContent =
    `Timeline of A${c.agentNumber}${c.depth > 0 ? ` ${c.name} (${c.profile})` : ""} · ${task ? (task.length > 60 ? `${task.slice(0, 59)}…` : task) : c.name}`;
  const row = tree.rows.get(id);
  $("ctx-meta").textContent =
    `${row ? statusWord(row) : c.status} · ${c.own.runs} run${c.own.runs === 1 ? "" : "s"} · ${c.tree.contexts} context${c.tree.contexts === 1 ? "" : "s"} in its tree · ${(c.tree.inputTokens + c.tree.outputTokens).toLocaleString("en-US")} tokens in its tree`;
  // The budget of the context's tree, as it stood at the position shown.
  $("budget-text").textContent = budgetText(report.budget ?? null);
  state.selectedRoot = row?.rootId ?? null;
  document.body.dataset.timeline = id;
  document.body.dataset.timelinePosition = String(report.position);
  timeline.show(c);
  updateActions();
};

const updateActions = () => {
  const row = state.selected ? tree.rows.get(state.selected) : null;
  const past = state.at !== null;
  const can = !!row && !past;
  $("send-text").disabled = !can;
  $("send").disabled = !can;
  $("stop").disabled = !can || row.status !== "running";
  $("pause").disabled = !can || row.status !== "running" || row.paused;
  $("resume").disabled = !can || !row.paused;
  $("budget-more").disabled = !can;
  $("budget-extend").disabled = !can;
  // Reading the past, nothing that writes may act: the New task form and the approvals are off too.
  for (const el of document.querySelectorAll("#new-form input, #new-form button, #approvals input, #approvals button"))
    el.disabled = past;
};

const selectContext = (id) => {
  if (state.selected === id) return;
  state.selected = id;
  updateActions();
  state.timelineLoaded = refreshTimeline();
};

// ---- live: the log over Server-Sent Events ----
const scheduleRefresh = () => {
  if (state.refreshTimer) return;
  state.refreshTimer = setTimeout(async () => {
    state.refreshTimer = 0;
    if (state.at !== null || state.dirty.size === 0) return;
    const ids = [...state.dirty].slice(0, 500);
    for (const id of ids) state.dirty.delete(id);
    const data = await attempt(() => call("GET", `/v1/tree?ids=${ids.join(",")}`));
    if (data && state.at === null) {
      tree.merge(data.rows);
      updateCount();
      updateActions();
      document.body.dataset.position = String(data.position);
    }
    if (state.dirty.size > 0) scheduleRefresh();
  }, 150);
};

const scheduleTimeline = () => {
  clearTimeout(state.timelineTimer);
  state.timelineTimer = setTimeout(() => void refreshTimeline(), 250);
};

const onEvent = (e) => {
  setHead(e.globalPosition);
  if (APPROVAL_CHANGES.has(e.type)) approvals.schedule();
  if (state.at !== null) return;
  // A tree's budget facts are in a stream of their own (`<root>:budget`), not a context: they change the budget shown.
  if (e.streamId.endsWith(":budget")) {
    if (e.streamId === `${state.selectedRoot}:budget`) scheduleTimeline();
    return;
  }
  state.dirty.add(e.streamId);
  // A root's row carries its whole tree's tokens, so any event below it refreshes it too.
  const root = tree.rows.get(e.streamId)?.rootId ?? e.data?.rootContextId;
  if (root) state.dirty.add(root);
  scheduleRefresh();
  if (e.streamId === state.selected || state.timelineChildren.has(e.streamId)) scheduleTimeline();
  else if (e.type === "ContextCreated" && e.data.parentContextId === state.selected) scheduleTimeline();
};

const startFollowing = (after) => {
  state.stopFollow?.();
  state.stopFollow = follow(after, {
    onEvent,
    onState: (s, err) => {
      if (state.at === null)
        setConn(s === "live" ? "live" : s === "reconnecting" ? "reconnecting…" : "offline", s === "live" ? "live" : "");
      if (err) showError(err);
    },
  });
};

// ---- whether the log verified (the server checks it as `actorzero audit` does; the page only says so) ----
const setVerified = (text, cls, detail = text) => {
  $("verified").textContent = text;
  $("verified").className = `verified ${cls}`;
  $("verified").title = detail;
};
const checkLog = async () => {
  setVerified("checking the log…", "");
  try {
    const v = await call("GET", "/v1/log/verification");
    if (v.ok) {
      const head = v.head.hash ? ` · head ${v.head.position}:${v.head.hash.slice(0, 12)}…` : "";
      setVerified(
        `log verified · ${v.events.toLocaleString("en-US")} events${head}`,
        "ok",
        `hash chain intact over ${v.events} events${v.unchained ? ` (${v.unchained} predate the chain)` : ""}`,
      );
    } else {
      const where = (p) => (p.position === null ? "" : `position ${p.position}: `);
      const [first] = v.problems;
      setVerified(
        `log NOT verified: ${where(first)}${first.problem}`,
        "bad",
        v.problems.map((p) => `${where(p)}${p.problem}`).join("\n"),
      );
    }
  } catch (e) {
    setVerified(`log not checked: ${e.message}`, "bad");
  }
};

const start = async () => {
  $("token").value = getToken();
  const data = await attempt(loadTree);
  if (!data) {
    setConn("offline");
    setVerified("log not checked", "");
    return;
  }
  performance.mark("actorzero:tree");
  clearError();
  startFollowing(data.position);
  void approvals.refresh();
  if (!tree.selected && tree.roots?.length) tree.select(tree.roots.at(-1).id);
  // The check reads the whole log and the store answers one thing at a time: the timeline first.
  void Promise.resolve(state.timelineLoaded).finally(checkLog);
};

// ---- time travel ----
let travelTimer = 0;
const travelTo = (at) => {
  state.at = at >= state.head ? null : at;
  $("at-text").textContent = state.at === null ? "live" : `as it was at position ${state.at} of ${state.head}`;
  $("at").setAttribute("aria-valuetext", state.at === null ? "live" : `position ${state.at}`);
  setConn(state.at === null ? "live" : "reading the past: actions are off", state.at === null ? "live" : "past");
  updateActions();
  clearTimeout(travelTimer);
  travelTimer = setTimeout(async () => {
    state.dirty.clear();
    const ok = await attempt(loadTree);
    if (ok) {
      if (state.selected && !tree.rows.has(state.selected)) {
        $("ctx-title").textContent = "Timeline";
        $("ctx-meta").textContent = "this context did not exist yet at that position";
        timeline.show(null);
      } else void refreshTimeline();
    }
    updateActions();
  }, 150);
};

$("at").addEventListener("input", () => travelTo(Number($("at").value)));
$("live").addEventListener("click", () => {
  $("at").value = String(state.head);
  travelTo(state.head);
});

// ---- acting ----
const act = (action) => async () => {
  const id = state.selected;
  if (!id || state.at !== null) return;
  const ok = await attempt(() => call("POST", `/v1/contexts/${id}/${action}`));
  if (ok !== undefined) clearError();
};
$("stop").addEventListener("click", act("stop"));
$("pause").addEventListener("click", act("pause"));
$("resume").addEventListener("click", act("resume"));

$("send-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  if (state.at !== null) return;
  const text = $("send-text").value.trim();
  if (!text || !state.selected) return;
  const ok = await attempt(() => call("POST", `/v1/contexts/${state.selected}/messages`, { text }));
  if (ok) {
    $("send-text").value = "";
    clearError();
  }
});

$("budget-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  if (state.at !== null || !state.selected) return;
  const more = parseBudget($("budget-more").value);
  if (typeof more === "string") return showError(new ApiError(0, "invalid_budget", more));
  const ok = await attempt(() => call("POST", `/v1/contexts/${state.selected}/budget/extend`, more));
  if (ok) {
    $("budget-more").value = "";
    clearError();
    void refreshTimeline();
  }
});

$("new-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  if (state.at !== null) return;
  const text = $("new-text").value.trim();
  if (!text) return;
  const ctx = await attempt(() => call("POST", "/v1/contexts", {}));
  if (!ctx) return;
  const sent = await attempt(() => call("POST", `/v1/contexts/${ctx.id}/messages`, { text }));
  if (!sent) return;
  $("new-text").value = "";
  clearError();
  state.selected = null;
  const data = await attempt(() => call("GET", `/v1/tree?ids=${ctx.id}`));
  if (data) tree.merge(data.rows);
  tree.select(ctx.id);
});

$("token-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  setToken($("token").value.trim());
  clearError();
  await start();
});
$("error-close").addEventListener("click", clearError);
$("expand-all").addEventListener("click", () => tree.expandAll(true));
$("collapse-all").addEventListener("click", () => tree.expandAll(false));

// Elapsed times of running contexts tick without any event.
setInterval(() => tree.redraw(), 1000);

void start();
