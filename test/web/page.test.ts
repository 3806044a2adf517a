// The web page in a real browser (Debian's Chromium) against a real serve over a PGlite data dir: the tree, live
// updates over SSE, stop from the page, a child's timeline against `actorzero audit --json`, time travel, errors.
import { mkdirSync } from "node:fs";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { Browser } from "playwright-core";
import { openPgliteStore } from "../../src/events/pgliteStore.ts";
import type { EventStore } from "../../src/events/store.ts";
import { createRuntime, scriptedModel, serve, type Runtime, type ServerHandle } from "../../src/index.ts";
import type { AuditReport } from "../../src/projections/auditReport.ts";
import { cli } from "../cli/support.ts";
import { call, isFirstStep, userMessages } from "../delegation/support.ts";
import { copyPgliteTemplate, removeDir } from "../support/pglite.ts";
import { gate } from "../server/support.ts";
import { launchBrowser, treeRows, waitForTree, watchedPage, type WatchedPage } from "./support.ts";

// The README shows docs/web-*.png as this test draws them: ACTORZERO_UPDATE_SCREENSHOTS=1 writes them there; any
// other run writes them under .scratch-testing/ (ignored by git), so a test run leaves the checkout as it was.
const SHOTS = new URL(
  process.env["ACTORZERO_UPDATE_SCREENSHOTS"] === "1" ? "../../docs/" : "../../.scratch-testing/screenshots/",
  import.meta.url,
);

let dataDir: string;
let store: EventStore;
let rt: Runtime;
let server: ServerHandle;
let browser: Browser;
let w: WatchedPage;
let held = gate();
const roots: Record<string, string> = {};
let childTimeline: { kind: string; position: number; text: string }[] = [];
let childId = "";

const usage = { inputTokens: 120, outputTokens: 30 };

beforeAll(async () => {
  dataDir = await copyPgliteTemplate();
  store = await openPgliteStore({ dataDir });
  rt = await createRuntime({
    store,
    limits: { retryBaseMs: 1, retryMaxMs: 5, passivateAfterMs: 50 },
    model: scriptedModel(async (req) => {
      const task = userMessages(req)[0] ?? "";
      if (req.agentNumber === 0 && task.startsWith("Survey")) {
        if (!isFirstStep(req)) return { text: "Survey done: XState and Akka compared.", usage };
        return {
          ...call("parallel", {
            tool_calls: [
              { name: "call_subordinate", arguments: { message: "Read the XState docs" } },
              { name: "call_subordinate", arguments: { message: "Read the Akka docs" } },
            ],
          }),
          usage,
        };
      }
      if (req.agentNumber === 0 && task.startsWith("Write")) {
        if (!isFirstStep(req)) return { text: "Release notes written.", usage };
        return { ...call("call_subordinate", { message: "Draft the release notes from the changelog" }), usage };
      }
      if (task.startsWith("Hold")) await held.opened;
      // An intervention is a user message in the run: answered as such, so the run ends with it.
      const latest = String(userMessages(req).at(-1) ?? "");
      if (latest.includes("Mind the gap"))
        return { text: "Minding the gap.", usage: { inputTokens: 80, outputTokens: 20 } };
      return { text: `Done: ${task}`, usage: { inputTokens: 80, outputTokens: 20 } };
    }),
  });
  for (const task of ["Survey actor runtimes for the design doc", "Write the release notes for 0.1"]) {
    const ctx = await rt.createContext();
    roots[task.split(" ")[0]!] = ctx.id;
    expect((await rt.send(ctx.id, task)).status).toBe("completed");
  }
  server = await serve(rt, { port: 0 });
  browser = await launchBrowser();
  w = await watchedPage(browser);
  mkdirSync(SHOTS, { recursive: true });
});

afterEach(() => {
  // Any console error or uncaught exception fails the test that caused it.
  expect(w.errors).toEqual([]);
});

afterAll(async () => {
  held.open();
  await browser?.close();
  await server?.close({ whileDraining: () => rt.close() }).catch(() => undefined);
  await store?.close().catch(() => undefined);
  if (dataDir) await removeDir(dataDir);
});

describe("given a served log with two finished delegation trees", () => {
  it("when the page opens, then each root shows its task, and the keyboard expands it to its subordinates, jobs grouped", async () => {
    await w.page.goto(server.url);
    const shown = await waitForTree(w.page, (r) => r.length === 2, "the two roots");
    expect(shown.map((r) => [r.agent, r.task, r.status, r.tokens])).toEqual([
      ["A0", "Survey actor runtimes for the design doc", "completed", "500"],
      ["A0", "Write the release notes for 0.1", "completed", "400"],
    ]);
    // Each finished root shows how long its last run took, as the page words a duration.
    expect(shown.every((r) => /^\d+(\.\d)? (ms|s)$/.test(r.elapsed))).toBe(true);
    // Keyboard only: focus the tree, go to the first root, open it.
    await w.page.focus("#tree");
    await w.page.keyboard.press("Home");
    await w.page.keyboard.press("ArrowRight");
    const open = await waitForTree(w.page, (r) => r.length === 4, "the survey's two subordinates");
    expect(open.slice(1, 3).map((r) => [r.agent, r.task])).toEqual([
      // A subordinate says its profile first (its name too, when it is not the start of its task).
      ["A1", "default Read the XState docs"],
      ["A1", "default Read the Akka docs"],
    ]);
    expect(await w.page.textContent("#tree .row.group")).toBe("parallel call · 2 jobs");
    await w.page.keyboard.press("End");
    await w.page.keyboard.press("ArrowRight");
    await waitForTree(w.page, (r) => r.length === 5, "the release notes' subordinate");
    await w.page.screenshot({
      path: new URL("web-tree.png", SHOTS).pathname,
      clip: { x: 0, y: 0, width: 1280, height: 330 },
    });
  });

  it("when a run starts outside the page, then the tree shows it running over SSE, without a reload", async () => {
    await w.page.evaluate(() => ((globalThis as any).sameDocument = true));
    held = gate();
    const ctx = await rt.createContext();
    roots["Hold"] = ctx.id;
    await rt.start(ctx.id, "Hold the line until told");
    const rows = await waitForTree(
      w.page,
      (r) => r.some((x) => x.id === ctx.id && x.status === "running"),
      "the new root running",
    );
    expect(rows.find((x) => x.id === ctx.id)!.task).toBe("Hold the line until told");
    expect(await w.page.evaluate(() => (globalThis as any).sameDocument)).toBe(true);
  });

  it("when Stop is pressed on the running root, then the log records RunStopped by the user and the row says stopped", async () => {
    const id = roots["Hold"]!;
    await w.page.click(`#tree-${id} .task`);
    await w.page.waitForSelector("#stop:not([disabled])");
    await w.page.click("#stop");
    await waitForTree(w.page, (r) => r.some((x) => x.id === id && x.status === "stopped"), "the root stopped");
    const stops = (await rt.events({ contextId: id })).filter((e) => e.type === "RunStopped");
    expect(stops.map((e) => e.type === "RunStopped" && e.data.by)).toEqual(["user"]);
    held.open();
  });

  it("when a message, a pause, a resume and an intervention are sent from the page, then the log records each and the row follows", async () => {
    const id = roots["Hold"]!;
    held = gate();
    await w.page.fill("#send-text", "Hold on once more");
    await w.page.keyboard.press("Enter");
    await waitForTree(w.page, (r) => r.some((x) => x.id === id && x.status === "running"), "the root running again");
    await w.page.click("#pause");
    await waitForTree(w.page, (r) => r.some((x) => x.id === id && x.status === "paused"), "the root paused");
    await w.page.click("#resume");
    await waitForTree(w.page, (r) => r.some((x) => x.id === id && x.status === "running"), "the root resumed");
    expect((await treeRows(w.page)).find((x) => x.id === id)!.tokens).toBe("0");
    // A message to the running context is an intervention in its run.
    await w.page.fill("#send-text", "Mind the gap");
    await w.page.keyboard.press("Enter");
    await w.page.waitForFunction(() => (globalThis as any).document.querySelector("#send-text")?.value === "");
    const interventions = (await rt.events({ contextId: id })).filter((e) => e.type === "InterventionReceived");
    expect(interventions.map((e) => e.type === "InterventionReceived" && e.data.text)).toEqual(["Mind the gap"]);
    held.open();
    // The numbers follow too: the tokens of the run's model calls (80 + 20 each) arrive without a reload.
    // The numbers follow too: the run's two model calls (before and after the intervention), 80 + 20 tokens each,
    // arrive without a reload.
    await waitForTree(
      w.page,
      (r) => r.some((x) => x.id === id && x.status === "completed" && x.tokens === "200"),
      "the run finished with its tokens",
    );
    const log = (await rt.events({ contextId: id })).map((e) => e.type);
    expect(
      log.filter((t) =>
        ["MessageReceived", "ContextPaused", "ContextResumed", "InterventionReceived", "RunCompleted"].includes(t),
      ),
    ).toEqual([
      "MessageReceived",
      "MessageReceived",
      "ContextPaused",
      "ContextResumed",
      "InterventionReceived",
      "RunCompleted",
    ]);
    const sent = (await rt.events({ contextId: id })).filter((e) => e.type === "MessageReceived");
    expect(sent.at(-1)!.type === "MessageReceived" && sent.at(-1)!.data.text).toBe("Hold on once more");
  });

  it("when a delegation step's link is followed with the keyboard, then the child's timeline lists its run step by step", async () => {
    await w.page.click(`#tree-${roots["Write"]} .task`);
    await w.page.waitForSelector(`#timeline [data-kind=tool_call]`);
    await w.page.focus("#timeline");
    // Down to the delegation step, then Enter follows its link to the child.
    const steps = await w.page.$$eval("#timeline [data-kind]", (els) => els.map((el) => (el as any).dataset["kind"]));
    await w.page.keyboard.press("Home");
    for (let i = 0; i < steps.indexOf("tool_call"); i++) await w.page.keyboard.press("ArrowDown");
    expect(await w.page.textContent("#detail")).toContain("call_subordinate");
    await w.page.keyboard.press("Enter");
    await w.page.waitForFunction(() =>
      (globalThis as any).document.querySelector("#ctx-title")?.textContent?.startsWith("Timeline of A1"),
    );
    await w.page.waitForSelector("#timeline [data-kind=end]");
    childId = (await w.page.evaluate(() => (globalThis as any).document.body.dataset["timeline"]))!;
    childTimeline = await w.page.$$eval("#timeline [data-kind]", (els) =>
      els.map((el) => ({
        kind: (el as any).dataset["kind"]!,
        position: Number((el as any).dataset["position"]),
        text: el.querySelector(".text")!.textContent!,
      })),
    );
    expect(childTimeline.map((r) => r.kind)).toEqual(["run", "message", "model_call", "end"]);
    await w.page.keyboard.press("Home");
    await w.page.keyboard.press("ArrowDown");
    await w.page.screenshot({
      path: new URL("web-timeline.png", SHOTS).pathname,
      clip: { x: 589, y: 44, width: 691, height: 716 },
    });
  });

  it("when the log position is moved back with the keyboard, then the tree is the one of that time; Live brings today's back", async () => {
    const createdAt = (await rt.events({ contextId: roots["Write"]! }))[0]!.globalPosition;
    await w.page.focus("#at");
    await w.page.keyboard.press("Home");
    await waitForTree(w.page, (r) => r.length === 0, "an empty tree at position 0");
    // One before the second root was created: only the first tree existed then.
    for (let i = 0; i < createdAt - 1; i++) await w.page.keyboard.press("ArrowRight");
    await w.page.waitForFunction(
      (p) => (globalThis as any).document.body.dataset["position"] === String(p),
      createdAt - 1,
    );
    const past = await treeRows(w.page);
    expect(past.map((r) => r.id)).not.toContain(roots["Write"]);
    expect(past.map((r) => r.id)).toContain(roots["Survey"]);
    expect(await w.page.isDisabled("#send")).toBe(true);
    await w.page.click("#live");
    await waitForTree(
      w.page,
      (r) => r.some((x) => x.id === roots["Hold"]) && r.some((x) => x.id === roots["Write"]),
      "today's roots again",
    );
  });

  it("when the server needs a token, then a missing or wrong one is shown as the API's error, and the right one shows the tree", async () => {
    const guarded = await serve(rt, { port: 0, token: "s3cret-token" });
    try {
      const t = await watchedPage(browser);
      await t.page.goto(guarded.url);
      await t.page.waitForSelector("#error:not([hidden])");
      expect(await t.page.textContent("#error-text")).toBe(
        "401 unauthorized: a bearer token is required (Authorization: Bearer <token>)",
      );
      await t.page.fill("#token", "wrong");
      await t.page.keyboard.press("Enter");
      await t.page.waitForFunction(() =>
        (globalThis as any).document.querySelector("#error-text")?.textContent?.includes("wrong"),
      );
      expect(await t.page.textContent("#error-text")).toBe("401 unauthorized: the bearer token is wrong");
      await t.page.fill("#token", "s3cret-token");
      await t.page.keyboard.press("Enter");
      await waitForTree(t.page, (r) => r.length === 3, "the three roots");
      expect(await t.page.isHidden("#error")).toBe(true);
      expect(t.errors).toEqual([]);
      // The only HTTP errors the browser noted are the two refusals above.
      expect(t.httpErrors).toHaveLength(2);
      expect(t.httpErrors.every((e) => e.includes("status of 401"))).toBe(true);
      await t.page.close();
    } finally {
      await guarded.close();
    }
  });

  it("when the log is audited by the CLI afterwards, then the child's timeline on the page showed exactly its steps and facts", async () => {
    await browser.close();
    await server.close({ whileDraining: () => rt.close() });
    await store.close();
    const r = await cli(["audit", childId, "--json", "--data-dir", dataDir]);
    expect(r.code, r.stderr).toBe(0);
    const report = JSON.parse(r.stdout) as AuditReport;
    expect(report.context.id).toBe(childId);
    const expected = report.context.runs.flatMap((run) => [
      { kind: "run", position: run.positions.first },
      ...run.entries.flatMap((e) => [
        { kind: e.kind, position: e.position },
        ...(e.kind === "tool_call" ? e.jobs.map(() => ({ kind: "job", position: e.position })) : []),
      ]),
      ...(run.status === "running" ? [] : [{ kind: "end", position: run.positions.last }]),
    ]);
    expect(childTimeline.map(({ kind, position }) => ({ kind, position }))).toEqual(expected);
    const run = report.context.runs[0]!;
    const model = run.entries.find((e) => e.kind === "model_call")!;
    expect(model.kind === "model_call" && model.usage).toEqual({ inputTokens: 80, outputTokens: 20 });
    expect(childTimeline.find((x) => x.kind === "model_call")!.text).toContain("80 in / 20 out");
    expect(childTimeline.find((x) => x.kind === "message")!.text).toBe(`superior: ${run.message}`);
    expect(childTimeline.find((x) => x.kind === "end")!.text).toBe(`completed: ${run.response}`);
  });
});
