// The timeline of one context: its runs in order, each step on one row (message, model call, tool call,
// delegation, jobs, intervention, pause, how the run ended). The facts are the server's audit report
// (GET /v1/contexts/:id/audit, the same report as `actorzero audit --json`); this file only lays them out.
import { clock, duration, h, json, oneLine, tokens } from "./format.js";
import { VirtualList } from "./virtualList.js";

const who = (link) => (link ? `A${link.agentNumber ?? "?"}` : "");

/** The rows of a context's timeline, in log order. */
export const timelineRows = (context) => {
  const out = [];
  context.runs.forEach((run, n) => {
    const by = run.requestedBy.kind === "user" ? "user" : "superior";
    out.push({
      kind: "run",
      position: run.positions.first,
      at: run.startedAt,
      text: `Run ${n + 1} · ${run.status} · asked by ${by} · ${duration(run.durationMs)} · ${tokens(run.usage.inputTokens + run.usage.outputTokens)} tokens · ${run.usage.modelCalls} model call${run.usage.modelCalls === 1 ? "" : "s"} · ${run.usage.toolCalls} tool call${run.usage.toolCalls === 1 ? "" : "s"}`,
      detail: {
        runId: run.runId,
        model: run.model,
        requestedBy: run.requestedBy,
        status: run.status,
        usage: run.usage,
        positions: run.positions,
      },
      status: run.status,
    });
    for (const e of run.entries) {
      const base = { kind: e.kind, position: e.position, at: e.at, detail: e };
      switch (e.kind) {
        case "message":
          out.push({ ...base, text: `${e.sender}: ${oneLine(e.text)}` });
          break;
        case "intervention":
          out.push({ ...base, text: `intervention: ${oneLine(e.text)}` });
          break;
        case "warning":
          out.push({ ...base, text: `warning (step ${e.step}): ${oneLine(e.text)}` });
          break;
        case "paused":
        case "resumed":
          out.push({ ...base, text: e.kind });
          break;
        case "remote_task":
          out.push({
            ...base,
            text: `remote task ${e.taskId ?? "(not taken yet)"} at ${e.url}${e.skill ? ` · skill ${e.skill}` : ""}`,
          });
          break;
        case "model_call": {
          const use = e.usage ? ` · ${e.usage.inputTokens} in / ${e.usage.outputTokens} out` : "";
          const what =
            e.outcome === "failed"
              ? `failed: ${e.error.reason} — ${oneLine(e.error.message, 120)}`
              : e.outcome === "pending"
                ? "waiting for the model"
                : e.toolCalls.length > 0
                  ? `calls ${e.toolCalls.map((t) => t.name).join(", ")}`
                  : `replied: ${oneLine(e.text, 120)}`;
          out.push({
            ...base,
            text: `model ${e.model} · step ${e.step}${e.attempt > 1 ? ` (attempt ${e.attempt})` : ""} · ${duration(e.durationMs)}${use} · ${what}`,
            failed: e.outcome === "failed",
          });
          break;
        }
        case "compaction": {
          const why = e.trigger === "endpoint" ? "endpoint said too long" : "near the window";
          out.push({
            ...base,
            text: `compaction · step ${e.step} · ${e.topics} topic(s) summarised · ${e.elided} result(s) elided · ${e.tokensBefore} → ${e.tokensAfter} tokens · ${why} · ${oneLine(e.summary, 100)}`,
          });
          break;
        }
        case "tool_call": {
          const result =
            e.outcome === "failed"
              ? `failed: ${oneLine(e.error, 100)}`
              : e.outcome === "pending"
                ? "running"
                : `→ ${oneLine(e.result, 100)}`;
          out.push({
            ...base,
            text: `tool ${e.name}(${oneLine(json(e.arguments), 80)}) · ${duration(e.durationMs)} · ${result}`,
            child: e.subordinate,
            // A call the run never saw return (it was stopped, or ended otherwise) is not running any more.
            childState: e.subordinate?.outcome ?? (run.status === "running" ? "running" : run.status),
            failed: e.outcome === "failed",
          });
          for (const job of e.jobs) {
            out.push({
              kind: "job",
              position: e.position,
              at: e.at,
              detail: job,
              text: `job ${job.toolName} · ${job.status}${job.error ? ` · ${oneLine(job.error, 80)}` : job.result ? ` → ${oneLine(job.result, 80)}` : ""}`,
              child: job.subordinate,
              // A job cancelled by a stop says so; its subordinate never returned an outcome.
              childState:
                job.subordinate?.outcome ??
                (job.status === "running" || job.status === "pending"
                  ? run.status === "running"
                    ? "running"
                    : run.status
                  : job.status),
              failed: job.status === "error",
            });
          }
          break;
        }
      }
    }
    if (run.status !== "running") {
      const end =
        run.status === "completed"
          ? `completed: ${oneLine(run.response, 160)}`
          : run.status === "stopped"
            ? `stopped by ${run.stoppedBy ?? "?"}`
            : `${run.status}: ${run.failure?.reason ?? ""} — ${oneLine(run.failure?.message, 140)}`;
      out.push({
        kind: "end",
        position: run.positions.last,
        at: run.endedAt,
        text: end,
        detail: { status: run.status, response: run.response, failure: run.failure, stoppedBy: run.stoppedBy },
        status: run.status,
        failed: run.status === "failed" || run.status === "interrupted",
      });
    }
  });
  return out;
};

export const LINE = 26;

export class TimelineView {
  constructor(host, detailHost, { onOpenChild }) {
    this.host = host;
    this.detailHost = detailHost;
    this.onOpenChild = onOpenChild;
    this.items = [];
    this.selected = -1;
    this.list = new VirtualList(host, {
      rowHeight: LINE,
      rowRole: "option",
      render: (item, i, el) => this.drawRow(item, i, el),
    });
    host.addEventListener("click", (e) => {
      const link = e.target.closest("[data-child]");
      if (link) return this.onOpenChild(link.dataset.child);
      const el = e.target.closest("[data-index]");
      if (el) this.select(Number(el.dataset.index));
    });
    host.addEventListener("keydown", (e) => this.key(e));
  }

  show(context) {
    const keep = this.items[this.selected]?.position;
    this.items = context ? timelineRows(context) : [];
    const again = keep === undefined ? -1 : this.items.findIndex((it) => it.position === keep);
    this.selected = again;
    this.list.setItems(this.items);
    this.drawDetail();
  }

  drawRow(item, index, el) {
    el.dataset.index = String(index);
    el.dataset.kind = item.kind;
    el.dataset.position = String(item.position);
    el.id = `tl-${index}`;
    el.className = `line kind-${item.kind}${item.failed ? " failed" : ""}${index === this.selected ? " selected" : ""}`;
    el.setAttribute("aria-selected", String(index === this.selected));
    const parts = [
      h("span", { class: "pos" }, `#${item.position}`),
      h("span", { class: "time" }, clock(item.at)),
      h("span", { class: "kind" }, item.kind.replace("_", " ")),
      h("span", { class: "text", title: item.text }, item.text),
      item.child
        ? h(
            "button",
            { type: "button", class: "child", "data-child": item.child.contextId, tabindex: "-1" },
            `${who(item.child)} ${item.childState ?? item.child.outcome ?? "running"} →`,
          )
        : null,
    ];
    el.replaceChildren(...parts.filter((p) => p !== null));
  }

  select(index) {
    if (this.items.length === 0) return;
    this.selected = Math.max(0, Math.min(this.items.length - 1, index));
    this.host.setAttribute("aria-activedescendant", `tl-${this.selected}`);
    this.list.reveal(this.selected);
    this.drawDetail();
  }

  drawDetail() {
    const item = this.items[this.selected];
    this.detailHost.replaceChildren(
      item
        ? h("pre", {}, `#${item.position} ${item.kind}  ${item.at ?? ""}\n${JSON.stringify(item.detail, null, 2)}`)
        : h(
            "p",
            { class: "hint" },
            this.items.length ? "Select a step (click, or the arrow keys) to see all of it here." : "No runs yet.",
          ),
    );
  }

  key(e) {
    const at = this.selected < 0 ? -1 : this.selected;
    switch (e.key) {
      case "ArrowDown":
        this.select(at + 1);
        break;
      case "ArrowUp":
        this.select(at - 1);
        break;
      case "PageDown":
        this.select(at + this.list.pageSize);
        break;
      case "PageUp":
        this.select(at - this.list.pageSize);
        break;
      case "Home":
        this.select(0);
        break;
      case "End":
        this.select(this.items.length - 1);
        break;
      case "Enter": {
        const child = this.items[at]?.child;
        if (child) this.onOpenChild(child.contextId);
        break;
      }
      default:
        return;
    }
    e.preventDefault();
  }
}
