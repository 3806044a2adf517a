// A tree's budget on the web page, in a real browser against a real serve: the tree says a run is over budget, the
// timeline pane shows the tree's budget and spend (as it stood, when reading the past), a malformed extension is
// refused on the page with nothing written, the Extend form is off in the past, and an extension lets the run finish.
import { describe, expect, it } from "vitest";
import { waitFor } from "xstate";
import { createRuntime, scriptedModel, type Runtime, type ServerHandle } from "../../src/index.ts";
import { servedPageForFile, type WatchedPage } from "./support.ts";

let rt: Runtime;
let server: ServerHandle;
let w: WatchedPage;

servedPageForFile(
  (store) =>
    createRuntime({
      store,
      limits: { passivateAfterMs: 60_000 },
      presets: { Default: { model: "gpt-4o-mini", maxOutputTokens: 50 } },
      model: scriptedModel((req) => ({
        text: `answer ${req.messages.filter((m) => m.role === "user").length}`,
        usage: { inputTokens: 100, outputTokens: 10 },
      })),
    }),
  { tokens: [{ name: "ci-bot", token: "act-secret-0123456789", role: "act" }] },
  (p) => ({ rt, server, w } = p),
);

const extensions = async (root: string) =>
  (await rt.events()).filter((e) => e.streamId === `${root}:budget` && e.type === "BudgetExtended").map((e) => e.data);

describe("given a served runtime with a run parked on its tree's budget", () => {
  it("when the page shows it, then it is over budget with its spend, a bad extension writes nothing, the form is off in the past, and Extend lets it finish", async () => {
    const root = await rt.createContext({ budget: { modelCalls: 1 } });
    expect(await rt.send(root.id, "first")).toMatchObject({ status: "completed" });
    await rt.start(root.id, "second");
    await waitFor(rt.actor(root.id)!, (s) => s.matches({ running: "parked" }), { timeout: 10_000 });

    const { page } = w;
    await page.goto(server.url);
    await page.fill("#token", "act-secret-0123456789");
    await page.keyboard.press("Enter");
    await page.locator(`#tree-${root.id} .pill`, { hasText: "over budget" }).waitFor();
    await page.click(`#tree-${root.id} .task`);
    await page.locator("#budget-text", { hasText: "Budget of its tree: modelCalls 1 of 1" }).waitFor();
    await page.waitForSelector("#budget-extend:not([disabled])");

    // Misspelt: refused on the page, naming the key; nothing asked of the server.
    await page.fill("#budget-more", "modelcalls=2");
    await page.click("#budget-extend");
    await page.waitForSelector("#error:not([hidden])");
    expect(await page.textContent("#error-text")).toContain("unknown key 'modelcalls'");
    expect(await extensions(root.id)).toEqual([]);
    await page.click("#error-close");

    // Reading the past: the form is off.
    await page.focus("#at");
    await page.keyboard.press("Home");
    await page.waitForSelector("#conn.past");
    expect(await page.isDisabled("#budget-more")).toBe(true);
    expect(await page.isDisabled("#budget-extend")).toBe(true);
    await page.click("#live");
    await page.waitForSelector("#budget-extend:not([disabled])");

    await page.fill("#budget-more", "modelCalls=2");
    await page.click("#budget-extend");
    await waitFor(rt.actor(root.id)!, (s) => !s.matches("running"), { timeout: 10_000 });
    expect((await rt.context(root.id))!.lastRun).toMatchObject({ status: "completed", response: "answer 2" });
    expect(await extensions(root.id)).toEqual([{ rootContextId: root.id, more: { modelCalls: 2 } }]);
    await page.locator("#budget-text", { hasText: "Budget of its tree: modelCalls 2 of 3" }).waitFor();
    await page.locator(`#tree-${root.id} .pill`, { hasText: "completed" }).waitFor();
    expect(await page.inputValue("#budget-more")).toBe("");
    // The tree's budget facts (reservations, settles) arrived live all along without an error on the page.
    expect(await page.isHidden("#error")).toBe(true);
    expect(w.errors).toEqual([]);
  });
});
