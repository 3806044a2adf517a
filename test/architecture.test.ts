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
  for (const m of text.matchAll(/(?:import|export)\s[^;]*?from\s+["'](\.[^"']+)["']|import\(\s*["'](\.[^"']+)["']\s*\)/g)) {
    out.push(resolve(dirname(file), (m[1] ?? m[2])!));
  }
  return out;
};

/**
 * Folder → folders it imports from. Files directly in src/ (the package entry, src/index.ts) are no
 * layer: they re-export every layer, so they are left out, as the repository's own checker does.
 */
export const folderGraph = (files: readonly string[]): Map<string, Set<string>> => {
  const graph = new Map<string, Set<string>>();
  for (const f of files) {
    const from = folderOf(f);
    if (from === ".") continue;
    for (const target of importsOf(f)) {
      if (!target.startsWith(SRC)) continue;
      const to = folderOf(target);
      if (to === from || to === ".") continue;
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

  it("when files are measured, then none in src/ is over 400 lines", () => {
    const long = files
      .map((f) => ({ file: relative(SRC, f).split(/[\\/]/).join("/"), lines: readFileSync(f, "utf8").split("\n").length - 1 }))
      .filter((f) => f.lines > 400);
    expect(long).toEqual([]);
  });
});
