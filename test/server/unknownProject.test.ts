// A root in a project the runtime does not configure is refused like an unknown profile: directly and over HTTP,
// with nothing written (its project's approvals and MCP narrowing would otherwise be silently dropped).
import { describe, expect, it } from "vitest";
import { RuntimeError } from "../../src/index.ts";
import { api, served } from "./support.ts";

describe("when a root is created in a project that is not configured", () => {
  it("then createContext and POST /v1/contexts refuse it naming the project, and the log stays empty", async () => {
    const s = await served(() => ({ text: "ok" }), {}, { projects: { alpha: { needsApproval: ["deploy"] } } });
    try {
      const before = await s.store.headPosition();
      const direct = await s.rt.createContext({ project: "alpah" }).catch((e: unknown) => e);
      expect(direct).toBeInstanceOf(RuntimeError);
      expect((direct as RuntimeError).message).toBe("Project 'alpah' not found. Available projects: alpha.");
      const http = await api(s.url, "POST", "/v1/contexts", { project: "alpah" });
      expect(http.status).toBe(400);
      expect(http.body.error.message).toContain("Project 'alpah' not found");
      expect(await s.store.headPosition()).toBe(before);
      // The configured one is taken.
      expect((await api(s.url, "POST", "/v1/contexts", { project: "alpha" })).status).toBe(201);
    } finally {
      await s.close();
    }
  });

  it("then with no projects configured at all, any project is refused and saying so", async () => {
    const s = await served(() => ({ text: "ok" }));
    try {
      await expect(s.rt.createContext({ project: "p" })).rejects.toThrow(
        "Project 'p' not found. No projects are configured.",
      );
    } finally {
      await s.close();
    }
  });
});
