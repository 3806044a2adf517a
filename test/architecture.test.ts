// The layering rules of the source tree, checked on every run: arrows point one way, files stay small.
import { describe, expect, it } from "vitest";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const SRC = resolve(dirname(fileURLToPath(import.meta.url)), "..", "src");

const filesUnder = (dir: string): string[] =>
  readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? filesUnder(p) : p.endsWith(".ts") ? [p] : [];
  });

/** The top folder under src/ a file belongs to ("." for src/index.ts). */
const folderOf = (file: string): string => {
  const rel = relative(SRC, file).split(/[\\/]/);
  return rel.length > 1 ? rel[0]! : ".";
};

/** Relative imports (static, re-exports and type-only alike) of one file, resolved to files. */
const importsOf = (file: string): string[] => {
  const text = readFileSync(file, "utf8");
  const out: string[] = [];
  for (const m of text.matchAll(
    /(?:import|export)\s[^;]*?from\s+["'](\.[^"']+)["']|import\(\s*["'](\.[^"']+)["']\s*\)/g,
  )) {
    out.push(resolve(dirname(file), (m[1] ?? m[2])!));
  }
  return out;
};

/**
 * Folder → folders it imports from. Files directly in src/ (the package entry, src/index.ts) re-export
 * every layer: the cycle check leaves them out, as the repository's own checker does; the layer check
 * (`withEntry`) keeps them, as the top row, so nothing below imports the entry.
 */
export const folderGraph = (
  files: readonly string[],
  options: { withEntry?: boolean } = {},
): Map<string, Set<string>> => {
  const graph = new Map<string, Set<string>>();
  for (const f of files) {
    const from = folderOf(f);
    if (from === "." && !options.withEntry) continue;
    for (const target of importsOf(f)) {
      if (!target.startsWith(SRC)) continue;
      const to = folderOf(target);
      if (to === from || (to === "." && !options.withEntry)) continue;
      if (!graph.has(from)) graph.set(from, new Set());
      graph.get(from)!.add(to);
    }
  }
  return graph;
};

/** Every cycle of the folder graph, each as the path that closes it. */
export const cyclesOf = (graph: Map<string, Set<string>>): string[][] => {
  const cycles: string[][] = [];
  const seen = new Set<string>();
  const walk = (node: string, path: string[]) => {
    for (const next of graph.get(node) ?? []) {
      const i = path.indexOf(next);
      if (i >= 0) {
        const cycle = [...path.slice(i), next];
        const key = [...cycle].slice(0, -1).sort().join(">");
        if (!seen.has(key)) {
          seen.add(key);
          cycles.push(cycle);
        }
        continue;
      }
      walk(next, [...path, next]);
    }
  };
  for (const node of graph.keys()) walk(node, [node]);
  return cycles;
};

/** The declared layers of docs/architecture.md: folder (or "." for the files directly in src/) → its row, 1 on top. */
export const declaredLayers = (markdown: string): Map<string, number> => {
  const block = /<!-- layers: begin[^>]*-->([\s\S]*?)<!-- layers: end -->/.exec(markdown)?.[1];
  if (!block) throw new Error("docs/architecture.md has no layers table between its markers");
  const rows = new Map<string, number>();
  for (const line of block.split("\n")) {
    const cells = line.split("|").map((c) => c.trim());
    const row = Number(cells[1]);
    if (!Number.isInteger(row) || row < 1) continue;
    for (const name of cells[2]!.matchAll(/`([^`]+)`/g)) rows.set(name[1] === "index.ts" ? "." : name[1]!, row);
  }
  return rows;
};

/** Each import that goes sideways or up the declared layers, as "from -> to". */
export const layerViolations = (graph: Map<string, Set<string>>, rows: Map<string, number>): string[] =>
  [...graph].flatMap(([from, tos]) =>
    [...tos].flatMap((to) => {
      const a = rows.get(from);
      const b = rows.get(to);
      if (a === undefined) return [`${from} is in no declared layer`];
      if (b === undefined) return [`${to} is in no declared layer`];
      return b > a ? [] : [`${from} (row ${a}) -> ${to} (row ${b})`];
    }),
  );

describe("given the source tree", () => {
  const files = filesUnder(SRC);

  it("when the checker is fed a folder cycle, then it reports it (so a pass below means something)", () => {
    const g = new Map([
      ["a", new Set(["b"])],
      ["b", new Set(["c"])],
      ["c", new Set(["a"])],
    ]);
    expect(cyclesOf(g)).toEqual([["a", "b", "c", "a"]]);
    expect(cyclesOf(new Map([["a", new Set(["b"])]]))).toEqual([]);
  });

  it("when folders import each other, then no folder imports one that imports it back", () => {
    const graph = folderGraph(files);
    expect(graph.get("runtime")?.size ?? 0).toBeGreaterThan(0);
    expect(cyclesOf(graph).map((c) => c.join(" -> "))).toEqual([]);
  });

  it("when the layers declared in docs/architecture.md are read, then every import goes down them, the package entry included", () => {
    const rows = declaredLayers(readFileSync(resolve(SRC, "..", "docs", "architecture.md"), "utf8"));
    expect(rows.get("runtime")).toBeLessThan(rows.get("actors")!);
    // The checker catches an import up a layer and one into a folder the table does not name.
    expect(
      layerViolations(
        new Map([
          ["events", new Set(["runtime"])],
          ["runtime", new Set(["nowhere"])],
        ]),
        rows,
      ),
    ).toEqual([
      `events (row ${rows.get("events")}) -> runtime (row ${rows.get("runtime")})`,
      "nowhere is in no declared layer",
    ]);
    const graph = folderGraph(files, { withEntry: true });
    expect(graph.get(".")?.size ?? 0).toBeGreaterThan(0);
    expect(layerViolations(graph, rows)).toEqual([]);
    // Every folder of src/ has its row.
    const folders = new Set(files.map(folderOf));
    expect([...folders].filter((f) => !rows.has(f))).toEqual([]);
  });

  it("when the server needs the runtime's types, then it takes them from the runtime's API file, not the package entry", () => {
    const fromEntry = files.filter(
      (f) => folderOf(f) === "server" && importsOf(f).some((t) => t === resolve(SRC, "index.ts")),
    );
    expect(fromEntry.map((f) => relative(SRC, f))).toEqual([]);
  });

  it("when files are measured, then none in src/ is over 400 lines", () => {
    const long = files
      .map((f) => ({
        file: relative(SRC, f).split(/[\\/]/).join("/"),
        lines: readFileSync(f, "utf8").split("\n").length - 1,
      }))
      .filter((f) => f.lines > 400);
    expect(long).toEqual([]);
  });
});
