// Replays the offline demo's tree, recorded once with `actorzero export-fixture`, without a model.
import { readFileSync } from "node:fs";
import { expect, it } from "vitest";
import { createRuntime, openPgliteStore, parseFixture } from "actorzero";
import { fixtureModel, fixtureTools } from "actorzero/testing";

const fixture = parseFixture(
  JSON.parse(readFileSync(new URL("./fixtures/demo-tree.fixture.json", import.meta.url), "utf8")),
);

it("replays the recorded demo tree to its recorded answer", async () => {
  const store = await openPgliteStore();
  const model = fixtureModel(fixture); // answers each request by its hash; an unknown request fails with a diff
  const rt = await createRuntime({ store, model, tools: fixtureTools(fixture), presets: fixture.presets });
  const root = await rt.createContext();
  const { status, response } = await rt.send(root.id, "Plan the launch of a small open-source note-taking app");
  expect(model.misses).toEqual([]);
  expect(status).toBe("completed");
  expect(response).toBe(fixture.contexts[0]!.answers[0]);
  expect(response).toContain("## Research");
  expect(await rt.children(root.id)).toHaveLength(2);
  await rt.close();
  await store.close();
});
