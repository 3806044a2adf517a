// Other web pages cannot drive a served runtime, in a real browser (Debian's Chromium): a page of another origin (a
// second local server on another port) tries a form post without JavaScript, a no-cors fetch with text/plain and a
// fetch with a JSON body; a page reached as evil.example (a DNS-rebinding name pointed at this machine) tries the
// API as its own origin. Nothing is written; the served page itself still creates and runs a root.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Browser } from "playwright-core";
import { served, type Served } from "../server/support.ts";
import { launchBrowser, waitForTree, watchedPage } from "./support.ts";

let s: Served;
let browser: Browser;
let attacker: Server;
let attackerUrl = "";
let target = "";
let port = "";

/** The other origin's page: two plain HTML forms aimed at the API, no script at all. */
const attackerPage = (api: string) => `<!doctype html><html><body>
<form id="plain" method="POST" action="${api}/v1/contexts" enctype="text/plain"><input name='{"name":"from-another-page","x":"' value='"}'><button id="send-plain">go</button></form>
<form id="urlencoded" method="POST" action="${api}/v1/contexts"><input name="name" value="from-another-page"><button id="send-urlencoded">go</button></form>
</body></html>`;

beforeAll(async () => {
  s = await served((req) => ({ text: `done: ${String(req.messages.at(-1)?.content ?? "")}` }));
  target = s.url;
  port = new URL(s.url).port;
  attacker = createServer((_req, res) =>
    res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(attackerPage(target)),
  );
  await new Promise<void>((resolve) => attacker.listen(0, "127.0.0.1", resolve));
  attackerUrl = `http://127.0.0.1:${(attacker.address() as AddressInfo).port}/`;
  // evil.example resolves to this machine, as a rebinding attacker's DNS would make it.
  browser = await launchBrowser(["--host-resolver-rules=MAP evil.example 127.0.0.1", "--no-proxy-server"]);
});

afterAll(async () => {
  await browser?.close();
  await new Promise<void>((resolve) => (attacker ? attacker.close(() => resolve()) : resolve()));
  await s?.close();
});

const logLength = async () => (await s.rt.events({ after: 0, limit: 100_000 })).length;

describe("given a runtime served on 127.0.0.1 and a page of another origin open in the same browser", () => {
  it("when that page posts a form (text/plain, then urlencoded) without JavaScript, then the API refuses it and nothing is written", async () => {
    const before = await logLength();
    const page = await browser.newPage();
    for (const button of ["#send-plain", "#send-urlencoded"]) {
      await page.goto(attackerUrl);
      const answered = page.waitForResponse((r) => r.url() === `${target}/v1/contexts`);
      await page.click(button);
      const res = await answered;
      expect(res.status(), button).toBe(403);
      expect(await res.text()).toContain("may not call this server");
    }
    await page.close();
    expect(await logLength()).toBe(before);
  });

  it("when that page sends a no-cors fetch with text/plain and a fetch with a JSON body, then neither writes anything", async () => {
    const before = await logLength();
    const id = (await s.rt.createContext()).id;
    const withContext = await logLength();
    const page = await browser.newPage();
    await page.goto(attackerUrl);
    const outcomes = await page.evaluate(
      async ({ api, id }) => {
        const tries: [string, RequestInit][] = [
          [
            `${api}/v1/contexts`,
            {
              method: "POST",
              mode: "no-cors",
              headers: { "content-type": "text/plain" },
              body: JSON.stringify({ name: "from-another-page" }),
            },
          ],
          [
            `${api}/v1/contexts/${id}/messages`,
            {
              method: "POST",
              mode: "no-cors",
              headers: { "content-type": "text/plain" },
              body: JSON.stringify({ text: "do my bidding" }),
            },
          ],
          [
            `${api}/v1/contexts`,
            {
              method: "POST",
              headers: { "content-type": "application/json" },
              body: JSON.stringify({ name: "from-another-page" }),
            },
          ],
          [
            `${api}/v1/contexts/${id}/messages`,
            {
              method: "POST",
              headers: { "content-type": "application/json" },
              body: JSON.stringify({ text: "do my bidding" }),
            },
          ],
        ];
        const out: string[] = [];
        for (const [url, init] of tries) {
          try {
            const res = await fetch(url, init);
            out.push(res.type === "opaque" ? "opaque" : `read ${res.status}`);
          } catch (e) {
            out.push((e as Error).name);
          }
        }
        return out;
      },
      { api: target, id },
    );
    // The no-cors answers cannot be read (opaque); the JSON ones fail their preflight: the page learns nothing.
    expect(outcomes).toEqual(["opaque", "opaque", "TypeError", "TypeError"]);
    await page.close();
    expect(withContext).toBeGreaterThan(before);
    expect(await logLength()).toBe(withContext);
  });

  it("when a page is reached as evil.example on the server's own port (DNS rebinding), then every call it makes is 421 and nothing is written", async () => {
    const before = await logLength();
    const page = await browser.newPage();
    const opened = await page.goto(`http://evil.example:${port}/`);
    expect(opened?.status()).toBe(421);
    const statuses = await page.evaluate(async () => {
      const json = { "content-type": "application/json" };
      return [
        (await fetch("/v1/contexts")).status,
        (await fetch("/v1/approvals")).status,
        (await fetch("/v1/contexts", { method: "POST", headers: json, body: "{}" })).status,
      ];
    });
    expect(statuses).toEqual([421, 421, 421]);
    await page.close();
    expect(await logLength()).toBe(before);
  });

  it("when the served page itself starts a new task, then a root is created and runs", async () => {
    const before = (await s.rt.contexts()).length;
    const w = await watchedPage(browser);
    await w.page.goto(target);
    await w.page.waitForSelector("#conn.live");
    await w.page.fill("#new-text", "Tidy the changelog");
    await w.page.keyboard.press("Enter");
    await waitForTree(
      w.page,
      (rows) => rows.some((r) => r.task === "Tidy the changelog" && (r.status === "completed" || r.status === "idle")),
      "the new root done",
    );
    const contexts = await s.rt.contexts();
    expect(contexts).toHaveLength(before + 1);
    expect(w.errors).toEqual([]);
    expect(w.httpErrors).toEqual([]);
    await w.page.close();
  });
});
