// Fits a table's columns into a terminal's width: what matters most stays whole, the rest gives way.
//
// Requirements:
// - Wide enough: every column at its natural width (nothing is cut when there is room).
// - Narrower: the steps are taken in order, each only as far as needed: flexible columns shrink
//   to a floor, then whole columns go, then the last shrinks go to their own floors.
// - A column that is never named in a step always stays whole.

/** One way to give back width: shrink a column to `to` columns, or drop it. */
export type FitStep = { shrink: number; to: number } | { drop: number };

/** `widths[i]`: the natural width of column i, or null when the column is dropped. */
export type Fitted = (number | null)[];

/** The widths that fit `natural` (the columns' natural widths) into `width`, with `gap` columns between each. */
export const fitColumns = (
  natural: readonly number[],
  width: number,
  gap: number,
  steps: readonly FitStep[],
): Fitted => {
  const widths: Fitted = [...natural];
  const total = () => {
    const shown = widths.filter((w): w is number => w !== null);
    return shown.reduce((s, w) => s + w, 0) + gap * Math.max(0, shown.length - 1);
  };
  for (const step of steps) {
    const over = total() - width;
    if (over <= 0) break;
    if ("drop" in step) widths[step.drop] = null;
    else {
      const now = widths[step.shrink];
      if (now === null || now === undefined || now <= step.to) continue;
      widths[step.shrink] = Math.max(step.to, now - over);
    }
  }
  return widths;
};

/** `text` cut to `width` columns, an ellipsis marking the cut. */
export const ellipsis = (text: string, width: number): string => {
  const chars = [...text];
  return chars.length <= width ? text : width <= 0 ? "" : `${chars.slice(0, width - 1).join("")}…`;
};
