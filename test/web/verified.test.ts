// The page says whether the log verified, as `actorzero audit` does: a mark from GET /v1/log/verification (the
// store's own verify), in a real browser against a real serve, on an intact log and on one edited with the
// append-only trigger off.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Browser } from "playwright-core";
import type { LogVerification } from "../../src/events/verifyLog.ts";
import { api, served, type Served } from "../server/support.ts";
import { launchBrowser, watchedPage, type WatchedPage } from "./support.ts";

let s: Served;
let browser: Browser;
let w: WatchedPage;

beforeAll(async () => {
  s = await served(() => ({ text: "A picnic for twelve: sandwiches, fruit, two blankets." }));
  const id = (await api(s.url, "POST", "/v1/contexts", {})).body.id as string;
  expect(
    (await api(s.url, "POST", `/v1/contexts/${id}/messages`, { text: "Plan a picnic for twelve people", wait: true }))
      .body.status,
  ).toBe("completed");
  browser = await launchBrowser();
  w = await watchedPage(browser);
});
afterAll(async () => {
  await browser?.close();
  await s?.close();
});

const mark = async (cls: "ok" | "bad") => {
  await w.page.waitForSelector(`#verified.${cls}`);
  return (await w.page.textContent("#verified"))!;
};

describe("given a served log", () => {
  it("when it is intact, then the API says so and the page shows it verified, with its event count and head", async () => {
    const events = await s.rt.events();
    const head = events.at(-1)!.globalPosition;
    const r = await api(s.url, "GET", "/v1/log/verification");
    expect(r.status).toBe(200);
    const v = r.body as LogVerification;
    expect(v).toMatchObject({ ok: true, events: events.length, head: { position: head }, problems: [] });
    expect(v.head.hash).toMatch(/^[0-9a-f]{64}$/);

    await w.page.goto(s.url);
    expect(await mark("ok")).toBe(
      `log verified · ${events.length} events · head ${head}:${v.head.hash!.slice(0, 12)}…`,
    );
    expect(w.errors).toEqual([]);
  });

  it("when an event was edited with the append-only trigger off, then the page shows it NOT verified, naming the position", async () => {
    const reply = (await s.rt.events()).find((e) => e.type === "RunCompleted")!;
    await s.store.sql.exec(`SET session_replication_role = replica;
      UPDATE events SET data = jsonb_set(data, '{response}', '"No picnic."') WHERE global_position = ${reply.globalPosition};
      SET session_replication_role = origin;`);
    const v = (await api(s.url, "GET", "/v1/log/verification")).body as LogVerification;
    expect(v.ok).toBe(false);
    expect(v.problems[0]!.position).toBe(reply.globalPosition);

    await w.page.reload();
    expect(await mark("bad")).toBe(`log NOT verified: position ${reply.globalPosition}: ${v.problems[0]!.problem}`);
    expect(w.errors).toEqual([]);
  });
});
