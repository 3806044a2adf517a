// Named tokens with roles over real HTTP: each role is refused (403) outside its routes and answered inside them,
// and a decision is recorded under the name of the token that made it.
import { mkdtempSync, rmSync } from "node:fs";
import { request } from "node:http";
import { tmpdir, userInfo } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "xstate";
import { z } from "zod";
import { isInFlight } from "../../src/actors/contextQueries.ts";
import { serve, serveControlSocket } from "../../src/index.ts";
import { controlSocketPath } from "../../src/server/policy.ts";
import { defineTool } from "../../src/tools/defineTool.ts";
import { TokenTable } from "../../src/server/tokens.ts";
import { api, served, sse, type Served } from "./support.ts";
import { internalsOf } from "../../src/runtime/runtime.ts";

const TOKENS = [
  { name: "dashboard", token: "read-secret-0123456789", role: "read" },
  { name: "ci-bot", token: "act-secret-0123456789", role: "act" },
  { name: "alice", token: "approve-secret-0123456789", role: "approve" },
  { name: "root", token: "admin-secret-0123456789", role: "admin" },
] as const;
const bearer = (name: string) => ({
  authorization: `Bearer ${TOKENS.find((t) => t.name === name)?.token ?? "admin-single-token"}`,
});

let s: Served;
const deploy = defineTool({
  name: "deploy",
  description: "deploys",
  input: z.object({ env: z.string() }),
  run: ({ env }) => `deployed to ${env}`,
});

beforeAll(async () => {
  s = await served(
    (req) => {
      const last = req.messages.at(-1)!;
      if (last.role === "user")
        return { toolCalls: [{ id: "c1", name: "deploy", arguments: JSON.stringify({ env: "prod" }) }] };
      return { text: `done: ${last.content as string}` };
    },
    { tokens: [...TOKENS], token: "admin-single-token" },
    { tools: [deploy], approvals: { tools: ["deploy"] }, limits: { passivateAfterMs: 60_000 } },
  );
});
afterAll(async () => s.close());

/** A context with a run parked on its deploy call, and that call's approval id. */
const parked = async () => {
  const id = (await s.rt.createContext()).id;
  await s.rt.start(id, "ship it");
  await waitFor(s.rt.actor(id)!, (x) => x.matches({ running: "parked" }), { timeout: 10_000 });
  return { id, approvalId: (await s.rt.approvals({ contextId: id }))[0]!.approvalId };
};

type Try = { what: string; need: "read" | "act" | "approve"; send: (name: string) => Promise<number> };

const tries = (ctx: string, approvalId: string): Try[] => [
  {
    what: "list contexts",
    need: "read",
    send: async (n) => (await api(s.url, "GET", "/v1/contexts", undefined, bearer(n))).status,
  },
  {
    what: "read the tree",
    need: "read",
    send: async (n) => (await api(s.url, "GET", "/v1/tree", undefined, bearer(n))).status,
  },
  {
    what: "list approvals",
    need: "read",
    send: async (n) => (await api(s.url, "GET", "/v1/approvals", undefined, bearer(n))).status,
  },
  {
    what: "follow the stream",
    need: "read",
    send: async (n) => {
      try {
        const stream = await sse(`${s.url}/v1/events/stream?after=0`, bearer(n));
        stream.abort();
        return 200;
      } catch (e) {
        return Number(/answered (\d+)/.exec((e as Error).message)?.[1]);
      }
    },
  },
  {
    what: "create a context",
    need: "act",
    send: async (n) => (await api(s.url, "POST", "/v1/contexts", {}, bearer(n))).status,
  },
  {
    what: "pause",
    need: "act",
    send: async (n) => (await api(s.url, "POST", `/v1/contexts/${ctx}/pause`, {}, bearer(n))).status,
  },
  {
    what: "resume",
    need: "act",
    send: async (n) => (await api(s.url, "POST", `/v1/contexts/${ctx}/resume`, {}, bearer(n))).status,
  },
  {
    what: "stop",
    need: "act",
    send: async (n) => (await api(s.url, "POST", `/v1/contexts/${ctx}/stop`, {}, bearer(n))).status,
  },
  {
    what: "send a message",
    need: "act",
    send: async (n) => (await api(s.url, "POST", `/v1/contexts/${ctx}/messages`, { text: "hello" }, bearer(n))).status,
  },
  // Refusals are checked before the approval is looked at: an unknown id is a 404 to those allowed, 403 to others.
  {
    what: "approve",
    need: "approve",
    send: async (n) => (await api(s.url, "POST", `/v1/approvals/${approvalId}/approve`, {}, bearer(n))).status,
  },
  {
    what: "reject",
    need: "approve",
    send: async (n) =>
      (await api(s.url, "POST", `/v1/approvals/${approvalId}/reject`, { reason: "no" }, bearer(n))).status,
  },
];

describe("given a server with a read, an act, an approve and an admin token", () => {
  it("when each token tries each route, then it is 403 exactly outside its role, and nothing it was refused is written", async () => {
    const idle = (await s.rt.createContext()).id;
    const unknownApproval = "00000000-0000-4000-8000-000000000000";
    const allowed: Record<string, readonly string[]> = {
      dashboard: ["read"],
      "ci-bot": ["read", "act"],
      alice: ["read", "approve"],
      root: ["read", "act", "approve"],
    };
    for (const name of ["dashboard", "alice", "ci-bot", "root"]) {
      for (const t of tries(idle, unknownApproval)) {
        const before = await s.store.headPosition();
        const status = await t.send(name);
        if (allowed[name]!.includes(t.need)) {
          expect(status, `${name} may ${t.what}`).not.toBe(403);
          // An allowed message starts a run that goes on after the 202 (until it parks on its deploy call): the
          // next refusal's "nothing written" is measured once nothing of it is in flight.
          const actor = s.rt.actor(idle);
          if (actor) await waitFor(actor, (x) => !isInFlight(x), { timeout: 10_000 });
        } else {
          expect(status, `${name} may not ${t.what}`).toBe(403);
          expect(await s.store.headPosition(), `${name} ${t.what} wrote nothing`).toBe(before);
        }
      }
    }
    const refused = await api(s.url, "POST", "/v1/contexts", {}, bearer("dashboard"));
    expect(refused.body.error).toEqual({
      code: "forbidden",
      message: "the token 'dashboard' (role read) may not act on contexts; it needs the role act or admin",
    });
    const noDecision = await api(s.url, "POST", `/v1/approvals/${unknownApproval}/approve`, {}, bearer("ci-bot"));
    expect(noDecision.body.error.message).toBe(
      "the token 'ci-bot' (role act) may not decide approvals; it needs the role approve or admin",
    );
    expect(
      (await api(s.url, "GET", "/v1/contexts", undefined, { authorization: "Bearer not-a-token-at-all" })).status,
    ).toBe(401);
  });

  it("when alice approves and the single --token rejects, then the log, the approvals and the model name each token, whatever the body says", async () => {
    const first = await parked();
    const granted = await api(
      s.url,
      "POST",
      `/v1/approvals/${first.approvalId}/approve`,
      { note: "ok" },
      bearer("alice"),
    );
    expect(granted.body).toEqual({ approvalId: first.approvalId, status: "granted", by: "alice" });
    const claimed = await parked();
    // A name in the body is refused, not recorded.
    expect(
      (
        await api(
          s.url,
          "POST",
          `/v1/approvals/${claimed.approvalId}/reject`,
          { reason: "no", by: "mallory" },
          bearer("alice"),
        )
      ).status,
    ).toBe(400);
    expect(
      (await api(s.url, "POST", `/v1/approvals/${claimed.approvalId}/reject`, { reason: "freeze" }, bearer("admin")))
        .body.by,
    ).toBe("admin");

    const decided = (await s.rt.events({ after: 0, limit: 100_000 })).filter(
      (e) => e.type === "ApprovalGranted" || e.type === "ApprovalDenied",
    );
    expect(decided.map((e) => [e.type, (e.data as { by: string }).by])).toEqual([
      ["ApprovalGranted", "alice"],
      ["ApprovalDenied", "admin"],
    ]);
    // What `actorzero approvals` lists (the approvals projection) and what the model was told.
    const { projections } = internalsOf(s.rt);
    await projections.catchUp();
    const views = (await projections.approvals.of([first.id, claimed.id])).flatMap((c) => c.approvals);
    expect(views.map((a) => [a.status, a.by])).toEqual([
      ["granted", "alice"],
      ["denied", "admin"],
    ]);
    await waitFor(s.rt.actor(claimed.id)!, (x) => !x.matches("running"), { timeout: 10_000 });
    const told = (await api(s.url, "GET", `/v1/contexts/${claimed.id}/history`, undefined, bearer("dashboard"))).body
      .history;
    expect(JSON.stringify(told)).toContain("Not run: admin denied this call: freeze");
  });

  it("when a call is approved over the control socket, then it is recorded under this process's OS user", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "az-sock-"));
    const control = await serveControlSocket(s.rt, dir);
    try {
      const { approvalId } = await parked();
      const answer = await new Promise<any>((resolve, reject) => {
        const req = request(
          {
            socketPath: controlSocketPath(dir),
            path: `/v1/approvals/${approvalId}/approve`,
            method: "POST",
            headers: { "content-type": "application/json" },
          },
          (res) => {
            let text = "";
            res.on("data", (d: Buffer) => (text += d.toString()));
            res.on("end", () => resolve(JSON.parse(text)));
          },
        );
        req.on("error", reject);
        req.end("{}");
      });
      expect(answer).toEqual({ approvalId, status: "granted", by: userInfo().username });
      const granted = (await s.rt.events({ after: 0, limit: 100_000 })).find(
        (e) => e.type === "ApprovalGranted" && e.data.approvalId === approvalId,
      );
      expect(granted?.data).toMatchObject({ by: userInfo().username });
    } finally {
      await control.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("when tokens are given badly, then serve refuses to start, naming the problem", async () => {
    const good = { name: "ok", token: "a-long-enough-secret", role: "read" as const };
    await expect(serve(s.rt, { port: 0, tokens: [good, { ...good, token: "another-long-secret" }] })).rejects.toThrow(
      "tokens: the name 'ok' is given twice",
    );
    await expect(serve(s.rt, { port: 0, tokens: [good, { ...good, name: "two" }] })).rejects.toThrow(
      "tokens: 'two' has the same secret as another token",
    );
    await expect(serve(s.rt, { port: 0, tokens: [{ ...good, role: "owner" as "read" }] })).rejects.toThrow(
      "tokens[0].role: must be one of read, act, approve, admin",
    );
    await expect(serve(s.rt, { port: 0, tokens: [{ ...good, token: "short" }] })).rejects.toThrow(
      "tokens[0].token: must be a secret of at least 16 characters",
    );
    await expect(serve(s.rt, { port: 0, token: "x", tokens: [{ ...good, name: "admin" }] })).rejects.toThrow(
      /no named token may have that name/,
    );
    // A named token is enough to bind beyond loopback.
    const wide = await serve(s.rt, { port: 0, host: "0.0.0.0", tokens: [good] });
    await wide.close();
  });

  it("finds the caller by its whole secret, and nobody by a near miss or an empty one", () => {
    const table = new TokenTable([...TOKENS]);
    expect(table.find("approve-secret-0123456789")).toEqual({ name: "alice", role: "approve" });
    expect(table.find("approve-secret-012345678")).toBeNull();
    expect(table.find("")).toBeNull();
  });
});

describe("given a server that allows 3 event streams, 2 per token", () => {
  it("when a token opens a third stream, or the server a fourth, then it is 429; a closed stream frees its place", async () => {
    const capped = await serve(s.rt, { port: 0, tokens: [...TOKENS], maxStreams: 3, maxStreamsPerToken: 2 });
    const open = (name: string) => sse(`${capped.url}/v1/events/stream`, bearer(name));
    const refusal = async (name: string) => {
      const res = await fetch(`${capped.url}/v1/events/stream`, { headers: bearer(name) });
      return { status: res.status, message: ((await res.json()) as { error: { message: string } }).error.message };
    };
    try {
      const a1 = await open("dashboard");
      const a2 = await open("dashboard");
      expect(await refusal("dashboard")).toEqual({
        status: 429,
        message: "the token 'dashboard' already has 2 event streams open; close one, or retry later",
      });
      const b1 = await open("alice");
      expect(await refusal("root")).toEqual({
        status: 429,
        message: "this server already has 3 event streams open; close one, or retry later",
      });
      a1.abort();
      // The server notices the closed connection on its own time: wait until the place is free.
      for (let i = 0; ; i++) {
        try {
          (await open("root")).abort();
          break;
        } catch (e) {
          expect((e as Error).message).toMatch(/answered 429/);
          if (i > 200) throw e;
          await new Promise((r) => setImmediate(r));
        }
      }
      a2.abort();
      b1.abort();
    } finally {
      await capped.close();
    }
  });
});
