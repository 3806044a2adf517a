// A large log in a real browser: 1,000 contexts stay usable because the tree draws only the rows in view.
import { describe, expect, it } from "vitest";
import { createRuntime, scriptedModel, type ServerHandle } from "../../src/index.ts";
import { fillBigLog } from "./bigLog.ts";
import { servedPageForFile, treeRows, waitForTree, type WatchedPage } from "./support.ts";

const CONTEXTS = 1000;
let server: ServerHandle;
let w: WatchedPage;
let roots: string[];

servedPageForFile(
  async (store) => {
    roots = await fillBigLog(store, CONTEXTS, 10_000);
    return createRuntime({ store, model: scriptedModel(() => ({ text: "unused" })) });
  },
  {},
  (p) => ({ server, w } = p),
);

describe("given a log of 1,000 contexts", () => {
  it("when every context is expanded, then the page holds only the rows in view, and the keyboard reaches the last one", async () => {
    await w.page.goto(server.url);
    await waitForTree(w.page, (r) => r.length > 0, "the first roots");
    expect(await w.page.textContent("#tree-count")).toBe("1000 contexts");
    await w.page.click("#expand-all");
    // The scroll area is as tall as all 1,000 rows, but only a screenful (plus a margin) is in the page.
    const height = await w.page.$eval("#tree .vl-spacer", (el) => (el as any).offsetHeight as number);
    expect(height).toBe(CONTEXTS * 28);
    const drawn = await treeRows(w.page);
    expect(drawn.length).toBeGreaterThan(10);
    expect(drawn.length).toBeLessThan(60);
    await w.page.focus("#tree");
    await w.page.keyboard.press("End");
    const last = await waitForTree(
      w.page,
      (r) => r.some((x) => x.agent === "A1" && x.task.includes(`Look into item ${CONTEXTS - 1} `)),
      "the last context",
    );
    expect(last.length).toBeLessThan(60);
    await w.page.keyboard.press("Home");
    await waitForTree(w.page, (r) => r[0]?.id === roots[0], "the first root again");
    expect(w.errors).toEqual([]);
  });
});
