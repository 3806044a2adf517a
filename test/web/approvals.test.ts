// The web page's approvals in a real browser against a real serve: a parked call is listed with Approve and
// Reject; pressing them records the decision under the name of the token the page was given (never a name the page
// says) and the run goes on; a reject without a reason is the API's error on the page, and nothing is written.
import { describe, expect, it } from "vitest";
import { waitFor } from "xstate";
import { createRuntime, scriptedModel, type Runtime, type ServerHandle } from "../../src/index.ts";
import { servedPageForFile, type ServedPage, type WatchedPage } from "./support.ts";
import { deployTool } from "../support/approvalTools.ts";

let rt: Runtime;
let store: ServedPage["store"];
let server: ServerHandle;
let w: WatchedPage;

const deploy = deployTool();

servedPageForFile(
  (store) =>
    createRuntime({
      store,
      tools: [deploy],
      limits: { passivateAfterMs: 60_000 },
      model: scriptedModel((req) => {
        const last = req.messages.at(-1)!;
        if (last.role === "user")
          return { toolCalls: [{ id: "c1", name: "deploy", arguments: JSON.stringify({ env: last.content }) }] };
        return { text: `done: ${last.content as string}` };
      }),
    }),
  { tokens: [{ name: "ops-lead", token: "approver-secret-0123456789", role: "approve" }] },
  (p) => ({ rt, store, server, w } = p),
);

const parkRun = async (env: string) => {
  const ctx = await rt.createContext();
  const { ended } = await rt.start(ctx.id, env);
  await waitFor(rt.actor(ctx.id)!, (s) => s.matches({ running: "parked" }), { timeout: 10_000 });
  return { id: ctx.id, ended };
};

const decisions = async (id: string) =>
  (await rt.events({ contextId: id }))
    .filter((e) => e.type === "ApprovalGranted" || e.type === "ApprovalDenied")
    .map((e) => ({ type: e.type, data: e.data }));

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
    expect(await decisions(prod.id)).toEqual([
      { type: "ApprovalGranted", data: expect.objectContaining({ by: "ops-lead", note: null }) },
    ]);
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
    expect(await staging.ended).toMatchObject({
      status: "completed",
      response: "done: Not run: ops-lead denied this call: change freeze",
    });
    expect(await decisions(staging.id)).toEqual([
      { type: "ApprovalDenied", data: expect.objectContaining({ by: "ops-lead", reason: "change freeze" }) },
    ]);
    expect(w.errors).toEqual([]);
  });

  it("when the page reads the past, then every control that writes is off (New task and approvals included) and a forced submit writes nothing; Live turns them back on", async () => {
    const waiting = await parkRun("qa");
    const { page } = w;
    const row = page.locator("#approvals li", { hasText: "qa" });
    await row.waitFor();
    await page.click(`#tree-${waiting.id} .task`);
    const writers = [
      "#new-text",
      "#new-form button",
      "#send-text",
      "#send",
      "#stop",
      "#pause",
      "#resume",
      "#approvals li input",
      "#approvals li button.approve",
      "#approvals li button.reject",
    ];
    await page.waitForSelector("#stop:not([disabled])");
    expect(await page.isDisabled("#new-text")).toBe(false);
    expect(await row.getByRole("button", { name: "Approve" }).isDisabled()).toBe(false);

    await page.focus("#at");
    await page.keyboard.press("Home");
    await page.waitForSelector("#conn.past");
    for (const selector of writers) expect(await page.isDisabled(selector), `${selector} is off`).toBe(true);
    // The approvals list is drawn again while in the past: its rows come back off.
    await page.evaluate(() => (globalThis as any).document.querySelector("#at").dispatchEvent(new Event("input")));
    const before = await store.headPosition();
    const writes: string[] = [];
    page.on("request", (r) => void (r.method() === "POST" && writes.push(r.url())));
    await page.evaluate(() => {
      const d = (globalThis as any).document;
      d.querySelector("#new-text").value = "Written from the past";
      d.querySelector("#new-form").requestSubmit();
      d.querySelector("#send-form").requestSubmit();
    });
    await page.click("#live");
    await page.waitForSelector("#new-text:not([disabled])");
    await page.waitForSelector("#approvals li button.approve:not([disabled])");
    // By now any request the forced submits made has been sent (the page sends in order): none was a write.
    expect(writes).toEqual([]);
    expect(await store.headPosition()).toBe(before);
    await row.getByRole("button", { name: "Approve" }).click();
    expect(await waiting.ended).toMatchObject({ status: "completed" });
    expect(w.errors).toEqual([]);
  });
});
