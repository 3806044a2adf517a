// DESIGN §5 rule 6 and §7 through the public API: a child inherits its caller's project, and copies the caller's
// model override only when its own configured preset resolves to Default; the resolved model reaches its requests.
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type EventStore,
  type ModelOverride,
  type ModelRequest,
  type Presets,
  type Projects,
} from "../../src/index.ts";
import { freshPgliteStore } from "../support/pglite.ts";
import { call, closeRuntimes, eventsOf, isFirstStep, last, runtimeWith } from "./support.ts";

let store: EventStore;
let profilesDir: string;
beforeAll(async () => {
  store = await freshPgliteStore();
  profilesDir = mkdtempSync(join(tmpdir(), "actorzero-profiles-"));
  const profile = (key: string, json: unknown) => {
    mkdirSync(join(profilesDir, key));
    writeFileSync(join(profilesDir, key, "profile.json"), JSON.stringify(json));
  };
  profile("coder", { title: "Coder", modelPreset: "Smart" });
  profile("drifter", { title: "Drifter", modelPreset: "Nope" }); // not a known preset: counts as Default
});
afterEach(closeRuntimes);
afterAll(async () => {
  await store.close();
  rmSync(profilesDir, { recursive: true, force: true });
});

const presets: Presets = {
  Default: { model: "default-model" },
  Fast: { model: "fast-model" },
  Smart: { model: "smart-model", baseURL: "http://smart.example/v1" },
};
const projects: Projects = {
  alpha: {},
  beta: { profilePresets: { developer: "Smart" } },
  gamma: { preset: "Smart" },
};

/**
 * A0's run message is the JSON of its call_subordinate arguments; an A1 whose message starts with "delegate: "
 * delegates the rest to an A2; everyone else answers "ok".
 */
const delegating = async () =>
  runtimeWith(
    store,
    (req: ModelRequest) => {
      if (!isFirstStep(req)) return { text: "ok" };
      const text = last(req).content as string;
      if (req.agentNumber === 0) return call("call_subordinate", JSON.parse(text));
      if (text.startsWith("delegate: ")) return call("call_subordinate", { message: text.slice("delegate: ".length) });
      return { text: "ok" };
    },
    { presets, projects, profiles: [profilesDir] },
  );

describe("when a context in a project delegates", () => {
  it("gives the child, and the child's child, the caller's project", async () => {
    const { rt } = await delegating();
    const root = await rt.createContext({ project: "alpha" });
    await rt.send(root.id, JSON.stringify({ message: "delegate: go further" }));
    const [a1] = await rt.children(root.id);
    const [a2] = await rt.children(a1!.id);
    expect([a1!.project, a2!.project]).toEqual(["alpha", "alpha"]);
    expect((await eventsOf(rt, a2!.id, "ContextCreated"))[0]!.data.project).toBe("alpha");
  });

  it("gives a child of a context with no project no project", async () => {
    const { rt } = await delegating();
    const root = await rt.createContext();
    await rt.send(root.id, JSON.stringify({ message: "work" }));
    expect((await rt.children(root.id))[0]!.project).toBeNull();
  });
});

type Row = {
  case: string;
  override: ModelOverride | null;
  project?: string;
  profile?: string;
  rootModel: string;
  childOverride: ModelOverride | null;
  childModel: string;
  childBaseURL?: string;
};

describe("when the caller has a model override", () => {
  it.each<Row>([
    {
      case: "a default-profile child (configured Default) copies a preset override",
      override: { preset: "Fast" },
      rootModel: "fast-model",
      childOverride: { preset: "Fast" },
      childModel: "fast-model",
    },
    {
      case: "a child whose profile sets a preset does not copy it",
      override: { preset: "Fast" },
      profile: "coder",
      rootModel: "fast-model",
      childOverride: null,
      childModel: "smart-model",
      childBaseURL: "http://smart.example/v1",
    },
    {
      case: "a child whose profile names an unknown preset (so Default) copies it",
      override: { preset: "Fast" },
      profile: "drifter",
      rootModel: "fast-model",
      childOverride: { preset: "Fast" },
      childModel: "fast-model",
    },
    {
      case: "a default-profile child copies a raw {model, baseURL} override",
      override: { model: "raw-model", baseURL: "http://raw.example/v1" },
      rootModel: "raw-model",
      childOverride: { model: "raw-model", baseURL: "http://raw.example/v1" },
      childModel: "raw-model",
      childBaseURL: "http://raw.example/v1",
    },
    {
      case: "a child whose project sets a preset for its profile does not copy it",
      override: { model: "raw-model" },
      project: "beta",
      profile: "developer",
      rootModel: "raw-model",
      childOverride: null,
      childModel: "smart-model",
      childBaseURL: "http://smart.example/v1",
    },
    {
      case: "a child of another profile in that project copies it",
      override: { model: "raw-model" },
      project: "beta",
      profile: "researcher",
      rootModel: "raw-model",
      childOverride: { model: "raw-model" },
      childModel: "raw-model",
    },
    {
      case: "a child whose project sets a preset does not copy it",
      override: { preset: "Fast" },
      project: "gamma",
      rootModel: "fast-model",
      childOverride: null,
      childModel: "smart-model",
      childBaseURL: "http://smart.example/v1",
    },
  ])("$case", async (row) => {
    const { rt, model } = await delegating();
    const root = await rt.createContext({
      ...(row.project ? { project: row.project } : {}),
      ...(row.override ? { modelOverride: row.override } : {}),
    });
    await rt.send(root.id, JSON.stringify({ message: "work", ...(row.profile ? { profile: row.profile } : {}) }));

    const [child] = await rt.children(root.id);
    expect(child!.modelOverride).toEqual(row.childOverride);
    expect((await eventsOf(rt, child!.id, "ContextCreated"))[0]!.data.modelOverride).toEqual(row.childOverride);
    const childRequest = model.requests.find((r) => r.contextId === child!.id)!;
    expect(childRequest.model).toBe(row.childModel);
    expect(childRequest.baseURL).toBe(row.childBaseURL);
    expect((await eventsOf(rt, child!.id, "RunStarted"))[0]!.data.model).toBe(row.childModel);
    expect(model.requests.filter((r) => r.contextId === root.id).map((r) => r.model)).toEqual([
      row.rootModel,
      row.rootModel,
    ]);
    // The caller's own override never changes.
    expect((await rt.context(root.id))!.modelOverride).toEqual(row.override);
    expect(await eventsOf(rt, root.id, "ModelOverrideSet")).toEqual([]);
  });
});

describe("when the caller has no model override", () => {
  it.each([
    [undefined, "default-model", undefined],
    ["coder", "smart-model", "http://smart.example/v1"],
  ])("a child of profile %s has none and uses its configured preset's model", async (profile, childModel, baseURL) => {
    const { rt, model } = await delegating();
    const root = await rt.createContext();
    await rt.send(root.id, JSON.stringify({ message: "work", ...(profile ? { profile } : {}) }));
    const [child] = await rt.children(root.id);
    expect(child!.modelOverride).toBeNull();
    const childRequest = model.requests.find((r) => r.contextId === child!.id)!;
    expect([childRequest.model, childRequest.baseURL]).toEqual([childModel, baseURL]);
    expect(model.requests.find((r) => r.contextId === root.id)!.model).toBe("default-model");
  });
});

describe("when the caller continues a child", () => {
  it("the child keeps its own override (or none), and the caller's stays as it was", async () => {
    const { rt, model } = await delegating();
    const root = await rt.createContext({ modelOverride: { preset: "Fast" } });
    await rt.send(root.id, JSON.stringify({ message: "code", profile: "coder", reset: true }));
    await rt.send(root.id, JSON.stringify({ message: "plain", reset: true }));
    const [coder, plain] = await rt.children(root.id);
    expect([coder!.modelOverride, plain!.modelOverride]).toEqual([null, { preset: "Fast" }]);

    await rt.send(root.id, JSON.stringify({ message: "more code", context_id: coder!.id }));
    await rt.send(root.id, JSON.stringify({ message: "more plain", context_id: plain!.id }));

    expect(await rt.children(root.id)).toHaveLength(2);
    expect((await rt.context(coder!.id))!.modelOverride).toBeNull();
    expect((await rt.context(plain!.id))!.modelOverride).toEqual({ preset: "Fast" });
    expect(model.requests.filter((r) => r.contextId === coder!.id).map((r) => r.model)).toEqual([
      "smart-model",
      "smart-model",
    ]);
    expect(model.requests.filter((r) => r.contextId === plain!.id).map((r) => r.model)).toEqual([
      "fast-model",
      "fast-model",
    ]);
    for (const id of [root.id, coder!.id, plain!.id]) expect(await eventsOf(rt, id, "ModelOverrideSet")).toEqual([]);
    expect((await rt.context(root.id))!.modelOverride).toEqual({ preset: "Fast" });
  });
});
