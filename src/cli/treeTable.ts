// A delegation tree as a table: the first column carries the tree's branches, the others line up.
import type { Paint } from "./ansi.ts";
import { table } from "./format.ts";

export type TreeNode<T> = { value: T; children: TreeNode<T>[] };

/** The rows of `roots` depth first, each with the branch drawing that leads to it. */
export const flatten = <T>(roots: readonly TreeNode<T>[]): { value: T; branch: string }[] => {
  const out: { value: T; branch: string }[] = [];
  const walk = (node: TreeNode<T>, lead: string, branch: string) => {
    out.push({ value: node.value, branch });
    node.children.forEach((child, i) => {
      const last = i === node.children.length - 1;
      walk(child, lead + (last ? "   " : "│  "), lead + (last ? "└─ " : "├─ "));
    });
  };
  for (const root of roots) walk(root, "", "");
  return out;
};

/** Builds the tree from parent links; nodes whose parent is not among them are roots. Order is kept. */
export const treeOf = <T>(
  items: readonly T[],
  id: (t: T) => string,
  parent: (t: T) => string | null,
): TreeNode<T>[] => {
  const nodes = new Map(items.map((t) => [id(t), { value: t, children: [] as TreeNode<T>[] }]));
  const roots: TreeNode<T>[] = [];
  for (const t of items) {
    const p = parent(t);
    const node = nodes.get(id(t))!;
    const up = p === null ? undefined : nodes.get(p);
    if (up) up.children.push(node);
    else roots.push(node);
  }
  return roots;
};

export const treeTable = <T>(
  roots: readonly TreeNode<T>[],
  header: string[],
  cells: (t: T) => string[],
  paint: Paint,
): string => {
  const rows = flatten(roots).map(({ value, branch }) => {
    const [first = "", ...rest] = cells(value);
    return [paint.dim(branch) + first, ...rest];
  });
  return table(header, rows, paint.dim);
};
