// The delegation tree: roots with their task, expandable to their subordinates, parallel jobs grouped under the
// call that started them. Rows come from the server (GET /v1/tree); this file only arranges and draws them.
import { duration, elapsed, h, oneLine, statusWord, tokens } from "./format.js";
import { VirtualList } from "./virtualList.js";

export const ROW_HEIGHT = 28;

export class TreeView {
  constructor(host, { onSelect }) {
    this.host = host;
    this.onSelect = onSelect;
    this.rows = new Map();
    this.kids = new Map();
    this.expanded = new Set();
    this.items = [];
    this.selected = null;
    /** Epoch ms running times are measured to: null live (now), the time of the position shown in the past. */
    this.clock = null;
    this.list = new VirtualList(host, {
      rowHeight: ROW_HEIGHT,
      rowRole: "treeitem",
      render: (item, i, el) => this.drawRow(item, i, el),
    });
    host.addEventListener("keydown", (e) => this.key(e));
    host.addEventListener("click", (e) => {
      const el = e.target.closest("[data-index]");
      if (!el) return;
      const item = this.items[Number(el.dataset.index)];
      if (e.target.closest(".toggle")) this.toggle(item);
      else this.select(item.id);
    });
  }

  /** Replaces every row (a fresh load, or the tree at another position). */
  setRows(rows) {
    this.rows = new Map(rows.map((r) => [r.id, r]));
    this.relink();
  }

  /** Updates or adds some rows (live events). */
  merge(rows) {
    let added = false;
    for (const r of rows) {
      if (!this.rows.has(r.id)) added = true;
      this.rows.set(r.id, r);
    }
    if (added) this.relink();
    else this.flatten();
  }

  relink() {
    this.kids = new Map();
    this.roots = [];
    for (const r of [...this.rows.values()].sort((a, b) => a.createdPosition - b.createdPosition)) {
      if (r.parentId === null || !this.rows.has(r.parentId)) this.roots.push(r);
      else {
        const list = this.kids.get(r.parentId) ?? [];
        list.push(r);
        this.kids.set(r.parentId, list);
      }
    }
    this.flatten();
  }

  /** The rows on screen: roots, and below each expanded context its children, jobs of one call under a group row. */
  flatten() {
    const out = [];
    const walk = (r, level) => {
      const kids = this.kids.get(r.id) ?? [];
      out.push({ kind: "context", id: r.id, level, hasKids: kids.length > 0 });
      if (!this.expanded.has(r.id)) return;
      // A call that started parallel jobs gets one group row, placed where its first job was created.
      const entries = [];
      const groups = new Map();
      for (const k of kids) {
        const key = k.parallelCall;
        if (key === null) {
          entries.push({ row: k });
          continue;
        }
        let g = groups.get(key);
        if (!g) {
          g = { group: `${r.id}/${key}`, jobs: [] };
          groups.set(key, g);
          entries.push(g);
        }
        g.jobs.push(k);
      }
      for (const e of entries) {
        if (e.row) walk(e.row, level + 1);
        else {
          out.push({ kind: "group", id: e.group, level: level + 1, jobs: e.jobs });
          for (const j of e.jobs) walk(j, level + 2);
        }
      }
    };
    for (const r of this.roots ?? []) walk(r, 1);
    this.items = out;
    this.list.setItems(out);
    const i = this.indexOf(this.selected);
    this.host.setAttribute("aria-activedescendant", i >= 0 ? `tree-${this.selected}` : "");
  }

  indexOf(id) {
    return this.items.findIndex((it) => it.kind === "context" && it.id === id);
  }

  drawRow(item, index, el) {
    el.dataset.index = String(index);
    el.replaceChildren();
    el.setAttribute("aria-level", String(item.level));
    el.style.paddingLeft = `${(item.level - 1) * 18 + 6}px`;
    if (item.kind === "group") {
      el.className = "row group";
      el.removeAttribute("id");
      delete el.dataset.id;
      el.removeAttribute("aria-expanded");
      el.setAttribute("aria-selected", "false");
      el.append(
        h("span", { class: "toggle-space" }),
        h(
          "span",
          { class: "group-label" },
          `parallel call · ${item.jobs.length} job${item.jobs.length === 1 ? "" : "s"}`,
        ),
      );
      return;
    }
    const r = this.rows.get(item.id);
    el.id = `tree-${r.id}`;
    el.className = `row status-${r.status}${r.id === this.selected ? " selected" : ""}`;
    el.dataset.id = r.id;
    el.setAttribute("aria-selected", String(r.id === this.selected));
    if (item.hasKids) el.setAttribute("aria-expanded", String(this.expanded.has(r.id)));
    else el.removeAttribute("aria-expanded");
    const status = statusWord(r);
    // A subordinate says who it is (name, profile) before its task: a researcher and a developer read apart.
    // (A name taken from the task itself is not said twice.)
    const named = r.task === null || !r.task.startsWith(r.name);
    // A remote subordinate also says where it runs: the agent's URL and the remote task's id.
    const where = r.remote
      ? ` @ ${r.remote.url}${r.remote.taskId ? ` · task ${r.remote.taskId.slice(0, 8)}` : ""}`
      : "";
    const who =
      r.parentId === null
        ? null
        : h("span", { class: "who" }, `${named ? `${r.name} · ${r.profile}` : r.profile}${where}`);
    const task = r.task === null ? h("em", {}, r.slot ?? r.name) : oneLine(r.task, 160);
    el.append(
      item.hasKids
        ? h("span", { class: "toggle", "aria-hidden": "true" }, this.expanded.has(r.id) ? "▾" : "▸")
        : h("span", { class: "toggle-space" }),
      h("span", { class: "agent" }, `A${r.agentNumber}`),
      h(
        "span",
        { class: "task", title: `${r.parentId === null ? "" : `${r.name} (${r.profile}): `}${r.task ?? ""}` },
        who,
        who && r.task !== null ? " " : null,
        who && r.task === null ? null : task,
      ),
      h("span", { class: `pill ${status.replace(" ", "-")}` }, status),
      h("span", { class: "num elapsed" }, duration(elapsed(r.startedAt, r.endedAt, this.clock ?? Date.now()))),
      r.treeTokens
        ? h(
            "span",
            {
              class: "num tokens",
              title: `its whole tree: ${r.treeTokens.inputTokens} in, ${r.treeTokens.outputTokens} out; itself: ${r.inputTokens} in, ${r.outputTokens} out`,
            },
            tokens(r.treeTokens.inputTokens + r.treeTokens.outputTokens),
          )
        : h(
            "span",
            { class: "num tokens", title: `${r.inputTokens} in, ${r.outputTokens} out, ${r.modelCalls} model calls` },
            tokens(r.inputTokens + r.outputTokens),
          ),
    );
  }

  redraw() {
    this.list.draw();
  }

  select(id, { focus = false } = {}) {
    if (!this.rows.has(id)) return;
    // Open every ancestor so the row can be shown.
    let at = this.rows.get(id);
    let opened = false;
    while (at?.parentId && this.rows.has(at.parentId)) {
      if (!this.expanded.has(at.parentId)) {
        this.expanded.add(at.parentId);
        opened = true;
      }
      at = this.rows.get(at.parentId);
    }
    this.selected = id;
    if (opened) this.flatten();
    const i = this.indexOf(id);
    this.host.setAttribute("aria-activedescendant", `tree-${id}`);
    this.list.reveal(i);
    if (focus) this.host.focus();
    this.onSelect(id);
  }

  toggle(item) {
    if (!item || item.kind !== "context" || !item.hasKids) return;
    if (this.expanded.has(item.id)) this.expanded.delete(item.id);
    else this.expanded.add(item.id);
    this.flatten();
  }

  expandAll(open) {
    this.expanded = open ? new Set([...this.kids.keys()]) : new Set();
    this.flatten();
    if (this.selected) this.list.reveal(Math.max(0, this.indexOf(this.selected)));
  }

  key(e) {
    const contexts = this.items.map((it, i) => [it, i]).filter(([it]) => it.kind === "context");
    if (contexts.length === 0) return;
    const at = contexts.findIndex(([it]) => it.id === this.selected);
    const move = (n) => {
      const next = contexts[Math.max(0, Math.min(contexts.length - 1, (at < 0 ? 0 : at) + n))];
      this.select(next[0].id);
    };
    const item = at >= 0 ? contexts[at][0] : null;
    switch (e.key) {
      case "ArrowDown":
        move(at < 0 ? 0 : 1);
        break;
      case "ArrowUp":
        move(-1);
        break;
      case "PageDown":
        move(this.list.pageSize);
        break;
      case "PageUp":
        move(-this.list.pageSize);
        break;
      case "Home":
        move(-contexts.length);
        break;
      case "End":
        move(contexts.length);
        break;
      case "ArrowRight":
        if (item?.hasKids && !this.expanded.has(item.id)) this.toggle(item);
        else if (item?.hasKids) move(1);
        break;
      case "ArrowLeft": {
        if (item && this.expanded.has(item.id)) this.toggle(item);
        else {
          const parent = item && this.rows.get(item.id)?.parentId;
          if (parent && this.rows.has(parent)) this.select(parent);
        }
        break;
      }
      case "Enter":
      case " ":
        if (item) this.toggle(item);
        break;
      default:
        return;
    }
    e.preventDefault();
  }
}
