// The page on a phone (390×844) in Debian's Chromium, and the words it shares with the CLI: no wider than the
// screen with the timeline on it, `completed` as the CLI says it, subordinates by name and profile, a stopped
// job not "running", and a past position timed to its own moment.
import { mkdirSync } from "node:fs";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { Browser, Page } from "playwright-core";
import { openPgliteStore } from "../../src/events/pgliteStore.ts";
import type { EventStore } from "../../src/events/store.ts";
import { createRuntime, scriptedModel, serve, type Runtime, type ServerHandle } from "../../src/index.ts";
import { call, isFirstStep, userMessages } from "../delegation/support.ts";
import { copyPgliteTemplate, removeDir } from "../support/pglite.ts";
import { gate } from "../server/support.ts";
import { launchBrowser, treeRows, waitForTree, type WatchedPage } from "./support.ts";

// As in page.test.ts: ACTORZERO_UPDATE_SCREENSHOTS=1 writes docs/web-phone.png, which the README shows.
const SHOTS = new URL(
  process.env["ACTORZERO_UPDATE_SCREENSHOTS"] === "1" ? "../../docs/" : "../../.scratch-testing/screenshots/",
  import.meta.url,
);
const PHONE = { width: 390, height: 844 };

let dataDir: string;
let store: EventStore;
let rt: Runtime;
let server: ServerHandle;
let browser: Browser;
let w: WatchedPage;
let page: Page;
let held = gate();
let planId = "";
let holdId = "";
// The page's own formatting, so the test reads a duration exactly as the page words it (plain JS: imported by a
// path the checker does not follow).
const FORMAT_JS = "../../src/server/web/format.js";
let duration: (ms: number) => string;

beforeAll(async () => {
  ({ duration } = (await import(FORMAT_JS)) as { duration: (ms: number) => string });
  dataDir = await copyPgliteTemplate();
  store = await openPgliteStore({ dataDir });
  rt = await createRuntime({
    store,
    limits: { passivateAfterMs: 50 },
    model: scriptedModel(async (req) => {
      const task = String(userMessages(req)[0] ?? "");
      if (req.agentNumber === 0 && isFirstStep(req)) {
        return call("parallel", {
          tool_calls: [
            {
              name: "call_subordinate",
              arguments: { profile: "researcher", name: "scout", message: `Research: ${task}` },
            },
            {
              name: "call_subordinate",
              arguments: { profile: "developer", name: "builder", message: `Build: ${task}` },
            },
          ],
        });
      }
      if (req.agentNumber === 0) return { text: `Done: ${task}` };
      if (task.includes("Hold")) await held.opened;
      return { text: `ok: ${task}` };
    }),
  });
  const plan = await rt.createContext();
  planId = plan.id;
  expect((await rt.send(plan.id, "Plan a small launch")).status).toBe("completed");
  server = await serve(rt, { port: 0 });
  browser = await launchBrowser();
  page = await browser.newPage({ viewport: PHONE, deviceScaleFactor: 1, isMobile: true, hasTouch: true });
  w = { page, errors: [], httpErrors: [] };
  page.on(
    "console",
    (m) => void (m.type() === "error" && !/^Failed to load resource/.test(m.text()) && w.errors.push(m.text())),
  );
  page.on("pageerror", (e) => void w.errors.push(`uncaught: ${e.message}`));
  mkdirSync(SHOTS, { recursive: true });
});

afterEach(() => expect(w.errors).toEqual([]));

afterAll(async () => {
  held.open();
  await browser?.close();
  await server?.close({ whileDraining: () => rt.close() }).catch(() => undefined);
  await store?.close().catch(() => undefined);
  if (dataDir) await removeDir(dataDir);
});

/** Resolves once `check` holds, looking again after each event appended to the log. */
const whenLog = async (check: () => Promise<boolean>) => {
  for (;;) {
    const head = await store.headPosition();
    if (await check()) return;
    await new Promise<void>((resolve) => {
      let off: (() => void) | null = null;
      let seen = false;
      const once = () => {
        if (seen) return;
        seen = true;
        off?.();
        resolve();
      };
      void rt.subscribe(once, { after: head }).then((u) => {
        off = u;
        if (seen) u();
      });
    });
  }
};

const box = (selector: string) =>
  page.$eval(
    selector,
    (el) =>
      JSON.parse(JSON.stringify(el.getBoundingClientRect())) as {
        x: number;
        y: number;
        width: number;
        height: number;
        right: number;
        bottom: number;
      },
  );

describe("given a served log, on a 390×844 phone screen", () => {
  it("when the page opens, then it is no wider than the screen and the tree and the timeline are both on it", async () => {
    await page.goto(server.url);
    await waitForTree(page, (r) => r.length === 1, "the root");
    await page.waitForSelector("#timeline [data-index]");
    const width = await page.evaluate(() => [
      (globalThis as any).document.documentElement.scrollWidth,
      (globalThis as any).document.body.scrollWidth,
    ]);
    expect(Math.max(...width)).toBeLessThanOrEqual(PHONE.width);
    for (const pane of ["#tree", "#timeline", "#at"]) {
      const b = await box(pane);
      expect(b.x, pane).toBeGreaterThanOrEqual(0);
      expect(b.right, pane).toBeLessThanOrEqual(PHONE.width);
      expect(b.y, pane).toBeLessThan(PHONE.height);
      expect(b.bottom, pane).toBeLessThanOrEqual(PHONE.height);
      expect(b.height, pane).toBeGreaterThan(20);
    }
  });

  it("when a finished tree is shown, then its root says completed as the CLI does, and each subordinate its name and profile", async () => {
    await page.focus("#tree");
    await page.keyboard.press("Home");
    await page.keyboard.press("ArrowRight");
    const rows = await waitForTree(page, (r) => r.length === 3, "the two subordinates");
    expect(rows[0]).toMatchObject({ id: planId, status: "completed" });
    expect(rows.slice(1).map((r) => [r.status, r.task])).toEqual([
      ["completed", "scout · researcher Research: Plan a small launch"],
      ["completed", "builder · developer Build: Plan a small launch"],
    ]);
    await page.screenshot({ path: new URL("web-phone.png", SHOTS).pathname });
  });

  it("when a run with parallel jobs is stopped, then its jobs' links no longer say running", async () => {
    held = gate();
    const hold = await rt.createContext();
    holdId = hold.id;
    const started = await rt.start(hold.id, "Hold the launch");
    await waitForTree(page, (r) => r.some((x) => x.id === holdId && x.status === "running"), "the held root running");
    // Both jobs' subordinates are waiting in their model call.
    await whenLog(
      async () =>
        (await rt.contexts()).filter((c) => c.parentContextId === holdId && c.status === "running").length === 2,
    );
    await page.click(`#tree-${holdId} .task`);
    await page.waitForSelector("#stop:not([disabled])");
    await page.click("#stop");
    expect((await started.ended).status).toBe("stopped");
    await waitForTree(page, (r) => r.some((x) => x.id === holdId && x.status === "stopped"), "the held root stopped");
    await page.waitForFunction(
      (id) =>
        (globalThis as any).document.body.dataset["timeline"] === id &&
        (globalThis as any).document.querySelectorAll("#timeline button.child").length >= 2,
      holdId,
    );
    await page.waitForFunction(() =>
      [...(globalThis as any).document.querySelectorAll("#timeline button.child")].every(
        (b) => !/running/.test(b.textContent ?? ""),
      ),
    );
    const links = await page.$$eval("#timeline button.child", (els) => els.map((e) => e.textContent));
    expect(links.length).toBeGreaterThanOrEqual(2);
    for (const l of links) expect(l).toMatch(/^A1 (stopped|cancelled) →$/);
    held.open();
  });

  it("when the log position is moved to a moment the run was going, then its elapsed time is counted to that moment", async () => {
    const events = await rt.events({ contextId: holdId });
    const start = events.find((e) => e.type === "RunStarted")!;
    const during = events.find((e) => e.type === "ParallelJobStarted")!;
    await page.$eval(
      "#at",
      (el, p) => {
        (el as any).value = String(p);
        el.dispatchEvent(new (globalThis as any).Event("input", { bubbles: true }));
      },
      during.globalPosition,
    );
    await page.waitForFunction(
      (p) => (globalThis as any).document.body.dataset["position"] === String(p),
      during.globalPosition,
    );
    const row = (await treeRows(page)).find((r) => r.id === holdId)!;
    expect(row.status).toBe("running");
    // What it was then, not the minutes since: the time between the run's start and that position.
    expect(row.elapsed).toBe(duration(Date.parse(during.recordedAt) - Date.parse(start.recordedAt)));
  });
});
