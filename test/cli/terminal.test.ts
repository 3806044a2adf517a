// The live tree on a real 80-column pseudo-terminal, and what stays on screen after Ctrl-C.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ContextRow } from "../../src/cli/commands/contexts.ts";
import { copyPgliteTemplate, removeDir } from "../support/pglite.ts";
import { cli } from "./support.ts";
import { runInTerminal, screenOf } from "./terminal.ts";

const FOOTER = "stopping the whole tree… (Ctrl-C again exits at once)";
const DURATION = /\b(\d+ms|\d+\.\d+s|\d+m\d\ds)\b/;

const dataDirs: string[] = [];
let during: string[];
let after: string[];
let code: number | null;
let rows: ContextRow[];
let wide: string[];

/** `run` on a terminal `columns` wide, Ctrl-C once the researcher's subordinate (the tree's third level) is on screen. */
const runAndInterrupt = async (columns: number) => {
  const dataDir = await copyPgliteTemplate();
  dataDirs.push(dataDir);
  // Slow model calls keep the tree at work until the Ctrl-C.
  const run = runInTerminal(["run", "--latency", "3000", "--data-dir", dataDir, "Write a haiku about logs"], {
    columns,
    rows: 40,
  });
  const during = screenOf(await run.waitFor((out) => screenOf(out).some((line) => /^\W*A2\b/.test(line))));
  run.type("\x03");
  const ended = await run.done;
  return { dataDir, during, after: screenOf(ended.stdout), code: ended.code };
};

beforeAll(async () => {
  const [narrow, wider] = await Promise.all([runAndInterrupt(80), runAndInterrupt(160)]);
  ({ during, after, code } = narrow);
  wide = wider.during;
  rows = JSON.parse((await cli(["contexts", "--json", "--data-dir", narrow.dataDir])).stdout) as ContextRow[];
});
afterAll(async () => {
  for (const dir of dataDirs) await removeDir(dir);
});

/** The live tree of a screen (the first table: the report's comes later): its header and the rows right under it. */
const liveTree = (screen: string[]): { at: number; header: string; rows: string[] } => {
  const at = screen.findIndex((l) => l.startsWith("AGENT"));
  expect(at, screen.join("\n")).toBeGreaterThanOrEqual(0);
  const rows: string[] = [];
  for (const line of screen.slice(at + 1)) {
    if (!/^[\s│├└─]*A\d+\b/.test(line)) break;
    rows.push(line);
  }
  return { at, header: screen[at]!, rows };
};

describe("the live tree at 80 columns", () => {
  it("fits every line in the width, with the status, the elapsed time and the start of the name on each row", () => {
    for (const screen of [during, after]) {
      const { header, rows: shown } = liveTree(screen);
      for (const line of [header, ...shown]) expect(line.length, line).toBeLessThan(80);
      expect(header.split(/\s+/)).toEqual(expect.arrayContaining(["AGENT", "NAME", "STATUS", "ELAPSED"]));
      expect(shown.length).toBeGreaterThanOrEqual(3);
      for (const line of shown) {
        expect(line).toMatch(/\b(idle|running|completed|stopped|failed|interrupted)\b/);
        expect(line).toMatch(DURATION);
      }
    }
  });

  it("shows each context of the tree with the start of its name and its final status", () => {
    const { rows: shown } = liveTree(after);
    expect(shown).toHaveLength(rows.length);
    for (const r of rows) {
      const line = shown.find((l) => new RegExp(`^[\\s│├└─]*A${r.agentNumber}\\b.*\\b${r.name.slice(0, 5)}`).test(l));
      expect(line, `A${r.agentNumber} ${r.name}\n${shown.join("\n")}`).toBeDefined();
      expect(line).toContain(r.shownStatus);
    }
  });
});

describe("the live tree on a wider terminal", () => {
  it("uses the width: every column shows, the activity and the context id too", () => {
    const { header, rows: shown } = liveTree(wide);
    expect(header.split(/\s+/)).toEqual([
      "AGENT",
      "PROFILE",
      "NAME",
      "STATUS",
      "STEP",
      "NOW",
      "ELAPSED",
      "TOKENS",
      "CONTEXT",
    ]);
    for (const line of shown) {
      expect(line.length, line).toBeLessThan(160);
      expect(line).toMatch(/\b[0-9a-f]{8}$/);
    }
  });
});

describe("Ctrl-C on the terminal", () => {
  it("stops the tree and exits 130", () => {
    expect(code, after.join("\n")).toBe(130);
    expect(rows.find((r) => r.agentNumber === 0)!.shownStatus).toBe("stopped");
  });

  it("keeps the footer under the last drawn tree, and the stop report below it", () => {
    const { at, rows: shown } = liveTree(after);
    const footer = at + 1 + shown.length;
    expect(after[footer]).toBe(FOOTER);
    expect(after.slice(footer + 1).join("\n")).toMatch(/^Stopped: A0 /m);
  });
});
