// A child parked for approval in one runtime and decided in another on the same PostgreSQL: the decision's
// process runs the child on to its end, and the first runtime's parent, which kept waiting in call_subordinate,
// receives that end (the child's answer, or its repaired error after a rejection) and completes.
import { expect, it } from "vitest";
import { openPostgresStore } from "../../src/events/postgresStore.ts";
import type { RecordedEvent } from "../../src/events/schema.ts";
import { scriptedModel, type ScriptedHandler } from "../../src/models/scripted.ts";
import { createRuntime, type Runtime } from "../../src/runtime/runtime.ts";
import { describeWithPostgres, usePostgresDatabase } from "../support/postgres.ts";
import { deployTool } from "../support/approvalTools.ts";

const deploy = deployTool();

/** A0 delegates and answers with what came back; A1 calls deploy (which waits for approval) and answers with its result. */
const handler: ScriptedHandler = (req) => {
  const last = req.messages.at(-1)!;
  if (req.agentNumber === 0) {
    if (last.role === "user")
      return {
        toolCalls: [
          { id: "d1", name: "call_subordinate", arguments: JSON.stringify({ message: "deploy it", reset: true }) },
        ],
      };
    return { text: `parent: ${(last.content as string).split("\n")[0]}` };
  }
  if (last.role === "user")
    return { toolCalls: [{ id: "k1", name: "deploy", arguments: JSON.stringify({ env: "prod" }) }] };
  return { text: `child: ${last.content as string}` };
};

/** Resolves with the first event of `type` appended after `after`. */
const next = <T extends RecordedEvent["type"]>(rt: Runtime, type: T, after: number) =>
  new Promise<Extract<RecordedEvent, { type: T }>>((resolve) => {
    void rt.subscribe((e) => (e.type === type ? resolve(e as Extract<RecordedEvent, { type: T }>) : undefined), {
      after,
    });
  });

describeWithPostgres(
  "given a root in runtime A whose child is parked for approval, decided in runtime B on the same PostgreSQL",
  () => {
    const db = usePostgresDatabase("actorzero_parked_parent");

    const twoRuntimes = async (body: (a: Runtime, b: Runtime, head: () => Promise<number>) => Promise<void>) => {
      const storeA = await openPostgresStore({ url: db.url() });
      const storeB = await openPostgresStore({ url: db.url() });
      const limits = { leaseTtlMs: 500, passivateAfterMs: 60_000 };
      const a = await createRuntime({ store: storeA, model: scriptedModel(handler), tools: [deploy], limits });
      const b = await createRuntime({ store: storeB, model: scriptedModel(handler), tools: [deploy], limits });
      try {
        await body(a, b, () => storeA.headPosition());
      } finally {
        await b.close();
        await a.close();
        await storeB.close();
        await storeA.close();
      }
    };

    /** A root in runtime A delegates; its child's deploy call parks awaiting approval. */
    const parkChildInA = async (a: Runtime, head: () => Promise<number>) => {
      const root = await a.createContext();
      const requested = next(a, "ApprovalRequested", await head());
      const { ended } = await a.start(root.id, "go");
      return { ended, approval: await requested };
    };

    it(
      "when B approves, the child completes in B and A's root receives its answer and completes",
      { timeout: 20_000 },
      async () => {
        await twoRuntimes(async (a, b, head) => {
          const { ended, approval } = await parkChildInA(a, head);
          expect((await a.approvals()).map((p) => p.approvalId)).toEqual([approval.data.approvalId]);

          await b.approve(approval.data.approvalId, { by: "bob" });

          const result = await ended;
          expect(result.status).toBe("completed");
          expect(result.response).toBe("parent: child: deployed to prod");
          expect((await a.context(approval.streamId))?.status).toBe("idle");
        });
      },
    );

    it(
      "when B rejects, A's root receives the child's answer to the denial and completes",
      { timeout: 20_000 },
      async () => {
        await twoRuntimes(async (a, b, head) => {
          const { ended, approval } = await parkChildInA(a, head);

          await b.reject(approval.data.approvalId, { by: "bob", reason: "not today" });

          const result = await ended;
          expect(result.status).toBe("completed");
          expect(result.response).toMatch(/^parent: child: .*not today/);
        });
      },
    );
  },
);
