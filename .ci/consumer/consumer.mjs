// A plain Node ES-module consumer: one delegation offline (scriptedModel) on an in-memory log, checked.
import assert from "node:assert/strict";
import { createRuntime, openPgliteStore, scriptedModel, serve } from "actorzero";
import { assertInvariants } from "actorzero/testing";

const store = await openPgliteStore();
const model = scriptedModel((request) => {
  const last = request.messages.at(-1);
  if (last?.role === "tool") return { text: `A0 got: ${last.content}` };
  if (request.messages.some((m) => m.role === "user" && String(m.content).includes("sub-question"))) return { text: "child answer" };
  return { toolCalls: [{ name: "call_subordinate", arguments: JSON.stringify({ message: "sub-question" }) }] };
});
const rt = await createRuntime({ store, model });
const root = await rt.createContext({ name: "root" });
const result = await rt.send(root.id, "question");
assert.equal(result.status, "completed");
assert.match(result.response ?? "", /child answer/);
const children = await rt.children(root.id);
assert.equal(children.length, 1);
assert.equal(children[0].agentNumber, 1);
await assertInvariants(rt, { rootContextId: root.id });
// serve finds the web page inside the installed package (dist/server/web), and its tree shows the run.
const server = await serve(rt, { port: 0 });
const page = await fetch(`${server.url}/`);
assert.equal(page.status, 200);
assert.match(await page.text(), /<script type="module" src="\/web\/main.js">/);
assert.equal((await fetch(`${server.url}/web/main.js`)).status, 200);
const tree = await (await fetch(`${server.url}/v1/tree`)).json();
assert.equal(tree.rows[0].task, "question");
await server.close();
await rt.close();
await store.close();
console.log(`consumer: delegated once, A0 ${result.status}, ${children.length} subordinate, invariants hold, web page served`);
