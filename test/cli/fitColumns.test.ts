// Fitting a table into a terminal's width: the steps are taken in order and only as far as needed.
import { describe, expect, it } from "vitest";
import { ellipsis, fitColumns, type FitStep } from "../../src/cli/fitColumns.ts";

// Columns: 0 agent (never named), 1 name, 2 activity, 3 id.
const STEPS: FitStep[] = [{ shrink: 2, to: 10 }, { drop: 3 }, { drop: 2 }, { shrink: 1, to: 4 }];
const NATURAL = [6, 20, 30, 8];
const total = (widths: (number | null)[]) => {
  const shown = widths.filter((w): w is number => w !== null);
  return shown.reduce((s, w) => s + w, 0) + 2 * (shown.length - 1);
};

describe("fitColumns", () => {
  it("keeps every column whole when the width allows", () => {
    expect(fitColumns(NATURAL, 200, 2, STEPS)).toEqual(NATURAL);
    expect(fitColumns(NATURAL, total(NATURAL), 2, STEPS)).toEqual(NATURAL);
  });

  it("shrinks the first flexible column only as far as needed", () => {
    expect(fitColumns(NATURAL, total(NATURAL) - 5, 2, STEPS)).toEqual([6, 20, 25, 8]);
  });

  it("drops columns in order once shrinking is not enough, and never touches a column no step names", () => {
    // activity at 10 and no id: 6 + 20 + 10 + 4 = 40
    expect(fitColumns(NATURAL, 40, 2, STEPS)).toEqual([6, 20, 10, null]);
    expect(fitColumns(NATURAL, 39, 2, STEPS)).toEqual([6, 20, null, null]);
    expect(fitColumns(NATURAL, 12, 2, STEPS)).toEqual([6, 4, null, null]);
  });
});

describe("ellipsis", () => {
  it("cuts to the width with a mark, and leaves what fits alone", () => {
    expect(ellipsis("researcher", 10)).toBe("researcher");
    expect(ellipsis("fact-checker", 6)).toBe("fact-…");
    expect(ellipsis("├─ é", 3)).toBe("├─…");
  });
});
