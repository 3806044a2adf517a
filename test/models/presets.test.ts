// Configured preset resolution and the effective model (DESIGN §7).
import { describe, expect, it } from "vitest";
import {
  configuredPreset,
  effectiveModel,
  presetApiKeys,
  presetTable,
  Preset,
  ProjectConfig,
  type Presets,
  type Projects,
} from "../../src/models/presets.ts";

const presets: Presets = {
  Default: { model: "default-model" },
  Fast: { model: "fast-model" },
  Smart: { model: "smart-model", baseURL: "https://smart.example/v1", apiKeyEnv: "SMART_KEY" },
  Local: { model: "llama", baseURL: "http://localhost:11434/v1" },
  Cheap: { model: "cheap-model" },
};

describe("configuredPreset", () => {
  // [project preset, project+profile preset, profile's own preset] → expected
  const matrix: [string | undefined, string | undefined, string | undefined, string][] = [
    [undefined, undefined, undefined, "Default"],
    [undefined, undefined, "Cheap", "Cheap"],
    ["Fast", undefined, undefined, "Fast"],
    ["Fast", undefined, "Cheap", "Fast"],
    [undefined, "Smart", undefined, "Smart"],
    [undefined, "Smart", "Cheap", "Smart"],
    ["Fast", "Smart", undefined, "Smart"],
    ["Fast", "Smart", "Cheap", "Smart"],
  ];

  it.each(matrix)(
    "given project preset %s, project+profile preset %s and profile preset %s, it is %s",
    (projectPreset, profileInProject, profileOwn, expected) => {
      const projects: Projects = {
        app: {
          ...(projectPreset ? { preset: projectPreset } : {}),
          ...(profileInProject ? { profilePresets: { researcher: profileInProject, developer: "Local" } } : {}),
        },
      };
      expect(
        configuredPreset({ presets, projects, project: "app", profile: "researcher", profileModelPreset: profileOwn }),
      ).toBe(expected);
    },
  );

  it("uses the profile's preset when the context has no project", () => {
    expect(
      configuredPreset({
        presets,
        projects: { app: { preset: "Fast" } },
        project: null,
        profile: "researcher",
        profileModelPreset: "Cheap",
      }),
    ).toBe("Cheap");
  });

  it("uses the profile's preset when the project is not configured", () => {
    expect(
      configuredPreset({
        presets,
        projects: {},
        project: "elsewhere",
        profile: "researcher",
        profileModelPreset: "Cheap",
      }),
    ).toBe("Cheap");
  });

  it("ignores another profile's project setting", () => {
    const projects: Projects = { app: { profilePresets: { developer: "Local" } } };
    expect(configuredPreset({ presets, projects, project: "app", profile: "researcher" })).toBe("Default");
  });

  it.each([
    ["project+profile", { profilePresets: { researcher: "Missing" }, preset: "Fast" }, "Cheap"],
    ["project", { preset: "Missing" }, "Cheap"],
    ["profile", {}, "Missing"],
  ] as const)("counts an unknown %s preset as Default, without falling through", (_level, project, profileOwn) => {
    expect(
      configuredPreset({
        presets,
        projects: { app: project },
        project: "app",
        profile: "researcher",
        profileModelPreset: profileOwn,
      }),
    ).toBe("Default");
  });

  it("treats an empty setting as no setting", () => {
    const projects: Projects = { app: { preset: "", profilePresets: { researcher: "" } } };
    expect(
      configuredPreset({ presets, projects, project: "app", profile: "researcher", profileModelPreset: "Cheap" }),
    ).toBe("Cheap");
  });

  it("does not take an inherited object key for a preset", () => {
    expect(configuredPreset({ presets, projects: {}, profile: "x", profileModelPreset: "toString" })).toBe("Default");
  });
});

describe("effectiveModel", () => {
  it("is the configured preset when there is no override", () => {
    expect(effectiveModel(null, "Smart", presets)).toEqual({
      model: "smart-model",
      baseURL: "https://smart.example/v1",
      presetName: "Smart",
    });
  });

  it("is the override's preset over the configured one", () => {
    expect(effectiveModel({ preset: "Fast" }, "Smart", presets)).toEqual({ model: "fast-model", presetName: "Fast" });
  });

  it("counts an override naming an unknown preset as Default", () => {
    expect(effectiveModel({ preset: "Gone" }, "Smart", presets)).toEqual({
      model: "default-model",
      presetName: "Default",
    });
  });

  it("uses a raw override as is, with no preset", () => {
    expect(effectiveModel({ model: "gpt-x", baseURL: "http://h/v1" }, "Smart", presets)).toEqual({
      model: "gpt-x",
      baseURL: "http://h/v1",
      presetName: null,
    });
    expect(effectiveModel({ model: "gpt-x" }, "Smart", presets)).toEqual({ model: "gpt-x", presetName: null });
  });

  it("counts an unknown configured preset as Default", () => {
    expect(effectiveModel(undefined, "Gone", presets)).toEqual({ model: "default-model", presetName: "Default" });
  });

  it("has a Default even when none is configured", () => {
    const table = presetTable({ Fast: { model: "fast-model" } });
    expect(table.Default.model).toBeTruthy();
    expect(effectiveModel(null, "Default", { Fast: { model: "fast-model" } })).toEqual({
      model: table.Default.model,
      presetName: "Default",
    });
  });
});

describe("the configuration schemas", () => {
  it("accept a preset and a project as configured", () => {
    expect(Preset.safeParse({ model: "m", baseURL: "http://localhost:1/v1", apiKeyEnv: "K" }).success).toBe(true);
    expect(
      ProjectConfig.safeParse({
        disabledProfiles: ["developer"],
        preset: "Fast",
        profilePresets: { researcher: "Smart" },
      }).success,
    ).toBe(true);
  });

  it("refuse a preset without a model, a bad URL, or an API key written in the file", () => {
    expect(Preset.safeParse({ baseURL: "http://x" }).success).toBe(false);
    expect(Preset.safeParse({ model: "m", baseURL: "not a url" }).success).toBe(false);
    expect(Preset.safeParse({ model: "m", apiKey: "sk-123" }).success).toBe(false);
    expect(ProjectConfig.safeParse({ disabledProfiles: "developer" }).success).toBe(false);
  });
});

describe("presetApiKeys", () => {
  it("reads an endpoint's key from its preset's environment variable", () => {
    const keyFor = presetApiKeys(presets, { SMART_KEY: "sk-smart" });
    expect(keyFor("https://smart.example/v1")).toBe("sk-smart");
    expect(keyFor("http://localhost:11434/v1")).toBeUndefined();
  });
});
