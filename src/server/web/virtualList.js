// A list that renders only the rows in view (plus a margin), so thousands of rows scroll without freezing.
// Rows have one fixed height; the spacer gives the scrollbar the full length.

export class VirtualList {
  /** host: the scrolling element; render(item, index, el) fills a row element. */
  constructor(host, { rowHeight, render, rowRole = "listitem" }) {
    this.host = host;
    this.rowHeight = rowHeight;
    this.renderRow = render;
    this.rowRole = rowRole;
    this.items = [];
    this.spacer = document.createElement("div");
    this.spacer.className = "vl-spacer";
    this.layer = document.createElement("div");
    this.layer.className = "vl-layer";
    this.spacer.append(this.layer);
    host.append(this.spacer);
    this.frame = 0;
    host.addEventListener("scroll", () => this.schedule(), { passive: true });
    new ResizeObserver(() => this.schedule()).observe(host);
  }

  setItems(items) {
    this.items = items;
    this.spacer.style.height = `${items.length * this.rowHeight}px`;
    this.draw();
  }

  schedule() {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      this.draw();
    });
  }

  /** Scrolls the least needed to show row `index`. */
  reveal(index) {
    const top = index * this.rowHeight;
    const h = this.host.clientHeight;
    if (top < this.host.scrollTop) this.host.scrollTop = top;
    else if (top + this.rowHeight > this.host.scrollTop + h) this.host.scrollTop = top + this.rowHeight - h;
    this.draw();
  }

  get pageSize() {
    return Math.max(1, Math.floor(this.host.clientHeight / this.rowHeight) - 1);
  }

  draw() {
    const margin = 10;
    const first = Math.max(0, Math.floor(this.host.scrollTop / this.rowHeight) - margin);
    const last = Math.min(
      this.items.length,
      Math.ceil((this.host.scrollTop + this.host.clientHeight) / this.rowHeight) + margin,
    );
    const rows = this.layer.children;
    const count = last - first;
    while (rows.length < count) {
      const el = document.createElement("div");
      el.setAttribute("role", this.rowRole);
      this.layer.append(el);
    }
    while (rows.length > count) this.layer.lastChild.remove();
    this.layer.style.transform = `translateY(${first * this.rowHeight}px)`;
    for (let i = 0; i < count; i++) this.renderRow(this.items[first + i], first + i, rows[i]);
  }
}
