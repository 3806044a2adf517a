// Shared by the browser tests: Debian's Chromium driven by playwright-core (no browser download), a page that
// fails its test on any console error, a served runtime with such a page for a test file, and small waits on what
// the page shows.
import { existsSync } from "node:fs";
import { chromium, type Browser, type ConsoleMessage, type Page } from "playwright-core";
import { afterAll, beforeAll } from "vitest";
import { serve, type Runtime, type ServeOptions, type ServerHandle } from "../../src/index.ts";
import { eventually } from "../support/async.ts";
import { freshPgliteStore, type FreshPgliteStore } from "../support/pglite.ts";

export const CHROMIUM = process.env["ACTORZERO_CHROMIUM"] ?? "/usr/bin/chromium";

/** `extraArgs`: more Chromium switches, e.g. `--host-resolver-rules=…` to point a name at this machine. */
export const launchBrowser = async (extraArgs: string[] = []): Promise<Browser> => {
  if (!existsSync(CHROMIUM))
    throw new Error(
      `no Chromium at ${CHROMIUM}: install Debian's chromium package (.ci/run does) or set ACTORZERO_CHROMIUM`,
    );
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", ...extraArgs],
  });
};

export type WatchedPage = {
  page: Page;
  /** Console errors and uncaught exceptions so far, as text. */
  errors: string[];
  /** Console errors that are the browser's note of an HTTP error status the test caused on purpose. */
  httpErrors: string[];
};

/** A page at 1280×800 whose console errors are collected (the tests assert there are none). */
export const watchedPage = async (browser: Browser): Promise<WatchedPage> => {
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  const errors: string[] = [];
  const httpErrors: string[] = [];
  page.on("console", (m: ConsoleMessage) => {
    if (m.type() !== "error") return;
    // Chromium logs every 4xx/5xx answer to fetch as a console error; those are sorted out, the rest fail the test.
    if (/^Failed to load resource: the server responded with a status of \d+/.test(m.text()))
      httpErrors.push(`${m.text()} (${m.location().url})`);
    else errors.push(m.text());
  });
  page.on("pageerror", (e) => errors.push(`uncaught: ${e.message}`));
  return { page, errors, httpErrors };
};

/** The tree rows on screen: agent, task, status, elapsed time and tokens of each. */
export const treeRows = (page: Page) =>
  page.$$eval("#tree [role=treeitem][data-id]", (els) =>
    els.map((el) => ({
      id: (el as any).dataset["id"]!,
      agent: el.querySelector(".agent")?.textContent ?? "",
      task: el.querySelector(".task")?.textContent ?? "",
      status: el.querySelector(".pill")?.textContent ?? "",
      elapsed: el.querySelector(".elapsed")?.textContent ?? "",
      tokens: el.querySelector(".tokens")?.textContent ?? "",
    })),
  );

/** Waits until `check` holds for the tree rows on screen. */
export const waitForTree = async (
  page: Page,
  check: (rows: Awaited<ReturnType<typeof treeRows>>) => boolean,
  what: string,
  timeoutMs = 30_000,
) => {
  let rows: Awaited<ReturnType<typeof treeRows>> = [];
  try {
    return await eventually(
      async () => {
        rows = await treeRows(page);
        return check(rows) ? rows : undefined;
      },
      timeoutMs,
      what,
    );
  } catch {
    throw new Error(`the tree never showed ${what}; it shows:\n${JSON.stringify(rows, null, 1)}`);
  }
};

export type ServedPage = { store: FreshPgliteStore; rt: Runtime; server: ServerHandle; w: WatchedPage };

/**
 * For the tests of a file: a fresh store, the runtime `start` makes on it, served on a free port with `options`,
 * and a watched page in Chromium; after them the browser, the server (draining the runtime) and the store close.
 * @example servedPageForFile((store) => createRuntime({ store, model }), {}, (p) => ({ rt, server, w } = p));
 */
export const servedPageForFile = (
  start: (store: FreshPgliteStore) => Promise<Runtime>,
  options: Omit<ServeOptions, "port">,
  set: (served: ServedPage) => void,
): void => {
  let store: FreshPgliteStore | undefined;
  let rt: Runtime | undefined;
  let server: ServerHandle | undefined;
  let browser: Browser | undefined;
  beforeAll(async () => {
    store = await freshPgliteStore();
    rt = await start(store);
    server = await serve(rt, { ...options, port: 0 });
    browser = await launchBrowser();
    set({ store, rt, server, w: await watchedPage(browser) });
  });
  afterAll(async () => {
    await browser?.close();
    await server?.close({ whileDraining: () => rt!.close() });
    await store?.close();
  });
};
