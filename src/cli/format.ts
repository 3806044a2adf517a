// Small text helpers shared by the commands: short ids, durations, token counts, cut texts, tables.
import { visibleLength } from "./ansi.ts";

/** The first 8 characters of an id: what tables show and what `<id>` arguments accept as a prefix. */
export const shortId = (id: string): string => id.slice(0, 8);

export const agent = (n: number): string => `A${n}`;

export const duration = (ms: number | null | undefined): string => {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return "–";
  if (ms < 1000) return `${Math.round(ms)}ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)}s`;
  const m = Math.floor(ms / 60_000);
  const s = Math.round((ms % 60_000) / 1000);
  return `${m}m${String(s).padStart(2, "0")}s`;
};

export const count = (n: number): string => n.toLocaleString("en-US");

export const tokens = (input: number, output: number): string => `${count(input)} in / ${count(output)} out`;

/** Whitespace collapsed to single spaces, cut to `max` characters with a mark saying how much was left out. */
export const oneLine = (text: string, max: number): string => {
  const flat = text.replace(/\s+/g, " ").trim();
  return cut(flat, max);
};

/** `text` cut to `max` characters (Infinity: whole), with `… (+N chars)` when cut. */
export const cut = (text: string, max: number): string => {
  if (!Number.isFinite(max) || text.length <= max) return text;
  const rest = text.length - max;
  return `${text.slice(0, max)}… (+${count(rest)} chars)`;
};

/** JSON of a value for a line, or the string itself when it is one. */
export const compactJson = (value: unknown): string => {
  if (typeof value === "string") {
    try {
      return JSON.stringify(JSON.parse(value));
    } catch {
      return value;
    }
  }
  return JSON.stringify(value) ?? String(value);
};

export const clock = (iso: string): string => {
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toISOString().slice(11, 23);
};

export const timestamp = (iso: string): string => {
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : `${d.toISOString().slice(0, 10)} ${d.toISOString().slice(11, 19)}`;
};

/** Left-aligned columns, padded by visible width; the last column is not padded. */
export const table = (header: string[], rows: string[][], style: (h: string) => string = (h) => h): string => {
  const widths = header.map((h, i) => Math.max(visibleLength(h), ...rows.map((r) => visibleLength(r[i] ?? ""))));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c + " ".repeat(widths[i]! - visibleLength(c))))
      .join("  ")
      .trimEnd();
  return [style(line(header)), ...rows.map(line)].join("\n");
};
