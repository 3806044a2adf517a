// Web page figures on a large log (1,000 contexts, 50,000 events) in Debian's Chromium: first paint, the tree's rows
// drawn, expanding everything, the longest frame while scrolling it end to end, and the server's tree folds.
import { openPgliteStore } from "../src/events/pgliteStore.ts";
import { createRuntime, scriptedModel, serve } from "../src/index.ts";
import { fillBigLog } from "../test/web/bigLog.ts";
import { existsSync } from "node:fs";
import { CHROMIUM, launchBrowser } from "../test/web/support.ts";
import { BenchSkipped } from "./support/skip.ts";
import type { Row } from "./main.ts";

const quick = process.env.BENCH_QUICK === "1";
const CONTEXTS = quick ? 200 : 1000;
const EVENTS = quick ? 10_000 : 50_000;

const timed = async <T>(work: () => Promise<T>): Promise<[T, number]> => {
  const t = performance.now();
  const out = await work();
  return [out, performance.now() - t];
};

export const run = async (): Promise<Row[]> => {
  if (!existsSync(CHROMIUM))
    throw new BenchSkipped(`no Chromium at ${CHROMIUM} (install Debian's chromium package or set ACTORZERO_CHROMIUM)`);
  const store = await openPgliteStore();
  const roots = await fillBigLog(store, CONTEXTS, EVENTS);
  const head = await store.headPosition();
  const rt = await createRuntime({ store, model: scriptedModel(() => ({ text: "unused" })) });
  const server = await serve(rt, { port: 0 });
  const browser = await launchBrowser();
  try {
    // The server's folds first, measured over HTTP as the page asks for them (a cold fold of the whole log, then warm).
    const [, coldTree] = await timed(() => fetch(`${server.url}/v1/tree`).then((r) => r.json()));
    const [, warmTree] = await timed(() => fetch(`${server.url}/v1/tree`).then((r) => r.json()));
    const [, pastTree] = await timed(() =>
      fetch(`${server.url}/v1/tree?at=${Math.floor(head / 2)}`).then((r) => r.json()),
    );
    const [, audit] = await timed(() =>
      fetch(`${server.url}/v1/contexts/${roots[0]}/audit?children=summary`).then((r) => r.json()),
    );

    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    await page.goto(server.url);
    await page.waitForSelector("#tree [role=treeitem][data-id]");
    // Passed as text: tsx would otherwise wrap the functions in helpers the page does not have.
    // The tree's time is the page's own mark (the rows drawn), not when this process got to ask: serve runs in this
    // process, and its store's work for the page's later requests would delay the asking.
    const paint = (await page.evaluate(
      `({ fcp: performance.getEntriesByName("first-contentful-paint")[0]?.startTime ?? NaN, tree: performance.getEntriesByName("actorzero:tree")[0]?.startTime ?? NaN })`,
    )) as {
      fcp: number;
      tree: number;
    };
    // Expanding every context, then scrolling the 1,000 rows end to end a screen per frame: the longest frame.
    const frames = (await page.evaluate(`(async () => {
      const frame = () => new Promise((resolve) => requestAnimationFrame(resolve));
      const t0 = performance.now();
      document.getElementById("expand-all").click();
      await frame();
      const expand = performance.now() - t0;
      const host = document.getElementById("tree");
      let worst = 0;
      let last = await frame();
      for (let top = 0; top <= host.scrollHeight; top += host.clientHeight) {
        host.scrollTop = top;
        const now = await frame();
        worst = Math.max(worst, now - last);
        last = now;
      }
      return { expand, worst, rows: host.querySelectorAll("[role=treeitem]").length };
    })()`)) as { expand: number; worst: number; rows: number };
    await page.close();
    // What the page's "log verified" mark costs the server: the whole log read and every link recomputed.
    const [verification, verifyMs] = await timed(() =>
      fetch(`${server.url}/v1/log/verification`).then((r) => r.json() as Promise<{ ok: boolean }>),
    );
    if (!verification.ok) throw new Error("the bench log does not verify");
    const where = `${CONTEXTS} contexts, ${head} events`;
    return [
      { name: `web: first contentful paint (${where})`, value: paint.fcp, unit: "ms", target: "< 1000 ms" },
      {
        name: `web: the tree's rows drawn, after navigation (${where})`,
        value: paint.tree,
        unit: "ms",
        target: "< 1000 ms",
      },
      { name: `web: expand all ${CONTEXTS} contexts, to the next frame`, value: frames.expand, unit: "ms" },
      {
        name: `web: longest frame scrolling all ${CONTEXTS} rows a screen per frame (${frames.rows} rows in the page)`,
        value: frames.worst,
        unit: "ms",
        target: "no freeze (< 100 ms)",
      },
      { name: `web: GET /v1/tree, cold (folds ${head} events)`, value: coldTree, unit: "ms" },
      { name: "web: GET /v1/tree, warm (nothing new to fold)", value: warmTree, unit: "ms" },
      { name: `web: GET /v1/tree?at= half way (time travel, from zero)`, value: pastTree, unit: "ms" },
      { name: "web: GET /v1/contexts/:root/audit?children=summary (a 4-context tree)", value: audit, unit: "ms" },
      {
        name: `web: GET /v1/log/verification (the header's mark; reads all ${head} events)`,
        value: verifyMs,
        unit: "ms",
      },
    ];
  } finally {
    await browser.close();
    await server.close({ whileDraining: () => rt.close() });
    await store.close();
  }
};
