// The tool calls waiting for a person: one row each (agent, tool, arguments), with Approve and Reject.
// A reject needs a reason (the model reads it), typed in the row's field; an approve takes it as its note.
// The decision is the API's (POST /v1/approvals/<id>/approve | reject); the list is asked again after each one
// and whenever the log shows an approval or a run's end.

const el = (tag, props = {}, ...children) => {
  const node = Object.assign(document.createElement(tag), props);
  for (const c of children) node.append(c);
  return node;
};

const argumentsText = (a) => {
  const text = typeof a === "string" ? a : JSON.stringify(a);
  return text.length > 80 ? `${text.slice(0, 79)}…` : text;
};

export class ApprovalsView {
  constructor(root, list, { call, attempt, locked }) {
    this.root = root;
    this.list = list;
    this.call = call;
    this.attempt = attempt;
    /** True while the page reads the past: the rows are drawn with their controls off. */
    this.locked = locked;
    this.timer = 0;
  }

  /** Asks for the pending approvals again (soon, once for a burst of events). */
  schedule() {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.refresh(), 150);
  }

  async refresh() {
    const data = await this.attempt(() => this.call("GET", "/v1/approvals"));
    if (!data) return;
    this.list.replaceChildren(...data.approvals.map((a) => this.row(a)));
    this.root.hidden = data.approvals.length === 0;
    document.body.dataset.approvals = String(data.approvals.length);
  }

  row(a) {
    const field = el("input", { placeholder: "reason (to reject) or note" });
    field.setAttribute("aria-label", `Reason or note for ${a.tool}`);
    const decide = (action) => async () => {
      if (this.locked()) return;
      const text = field.value.trim();
      // Who decides is the server's to record (the token's name), not the page's to say.
      const body = action === "approve" ? (text ? { note: text } : {}) : { reason: text };
      const ok = await this.attempt(() => this.call("POST", `/v1/approvals/${a.approvalId}/${action}`, body));
      if (ok) await this.refresh();
    };
    const approve = el("button", { type: "button", textContent: "Approve", className: "approve" });
    const reject = el("button", { type: "button", textContent: "Reject", className: "reject" });
    approve.addEventListener("click", decide("approve"));
    reject.addEventListener("click", decide("reject"));
    for (const control of [field, approve, reject]) control.disabled = this.locked();
    return el(
      "li",
      { className: "approval" },
      el("span", { className: "agent", textContent: `A${a.agentNumber}` }),
      el("code", { className: "tool", textContent: a.tool }),
      el("span", { className: "args muted", textContent: argumentsText(a.arguments) }),
      field,
      approve,
      reject,
    );
  }
}
