// The web page's approvals in a real browser against a real serve: a parked call is listed with Approve and
// Reject; pressing them records the decision under the name of the token the page was given (never a name the page
// says) and the run goes on; a reject without a reason is the API's error on the page, and nothing is written.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Browser } from "playwright-core";
import { waitFor } from "xstate";
import { createRuntime, scriptedModel, serve, type Runtime, type ServerHandle } from "../../src/index.ts";
import type { EventStore } from "../../src/events/store.ts";
import { freshPgliteStore } from "../support/pglite.ts";
import { launchBrowser, watchedPage, type WatchedPage } from "./support.ts";
import { deployTool } from "../support/approvalTools.ts";

let store: EventStore;
let rt: Runtime;
let server: ServerHandle;
let browser: Browser;
let w: WatchedPage;

const deploy = deployTool();

beforeAll(async () => {
  store = await freshPgliteStore();
  rt = await createRuntime({
    store,
    tools: [deploy],
    limits: { passivateAfterMs: 60_000 },
    model: scriptedModel((req) => {
      const last = req.messages.at(-1)!;
      if (last.role === "user") return { toolCalls: [{ id: "c1", name: "deploy", arguments: JSON.stringify({ env: last.content }) }] };
      return { text: `done: ${last.content as string}` };
    }),
  });
  server = await serve(rt, { port: 0, tokens: [{ name: "ops-lead", token: "approver-secret-0123456789", role: "approve" }] });
  browser = await launchBrowser();
  w = await watchedPage(browser);
});
afterAll(async () => {
  await browser?.close();
  await server?.close({ whileDraining: () => rt.close() });
  await store?.close();
});

const parkRun = async (env: string) => {
  const ctx = await rt.createContext();
  const { ended } = await rt.start(ctx.id, env);
  await waitFor(rt.actor(ctx.id)!, (s) => s.matches({ running: "parked" }), { timeout: 10_000 });
  return { id: ctx.id, ended };
};

const decisions = async (id: string) =>
  (await rt.events({ contextId: id })).filter((e) => e.type === "ApprovalGranted" || e.type === "ApprovalDenied").map((e) => ({ type: e.type, data: e.data }));

describe("given a served runtime with a run parked awaiting approval", () => {
  it("when Approve and Reject are pressed on the page, then each decision is recorded and its run goes on", async () => {
    const prod = await parkRun("prod");
    const { page } = w;
    await page.goto(server.url);
    await page.fill("#token", "approver-secret-0123456789");
    await page.keyboard.press("Enter");
    const row = page.locator("#approvals li", { hasText: "deploy" });
    await row.waitFor();
    expect(await row.textContent()).toContain('{"env":"prod"}');
    // The tree says what the running context waits on.
    await page.locator(`#tree-${prod.id} .pill`, { hasText: "awaiting approval" }).waitFor();
    await row.getByRole("button", { name: "Approve" }).click();
    expect(await prod.ended).toMatchObject({ status: "completed", response: "done: deployed to prod" });
    expect(await decisions(prod.id)).toEqual([{ type: "ApprovalGranted", data: expect.objectContaining({ by: "ops-lead", note: null }) }]);
    await page.waitForSelector("#approvals-pane", { state: "hidden" });

    const staging = await parkRun("staging");
    const next = page.locator("#approvals li", { hasText: "staging" });
    await next.waitFor();
    // No reason: the API refuses it, the page shows why, and nothing is written.
    await next.getByRole("button", { name: "Reject" }).click();
    await page.waitForSelector("#error:not([hidden])");
    expect(await page.textContent("#error-text")).toMatch(/400 invalid_request: reason: /);
    expect(await decisions(staging.id)).toEqual([]);
    await next.getByRole("textbox").fill("change freeze");
    await next.getByRole("button", { name: "Reject" }).click();
    expect(await staging.ended).toMatchObject({ status: "completed", response: "done: Not run: ops-lead denied this call: change freeze" });
    expect(await decisions(staging.id)).toEqual([{ type: "ApprovalDenied", data: expect.objectContaining({ by: "ops-lead", reason: "change freeze" }) }]);
    expect(w.errors).toEqual([]);
  });
});
