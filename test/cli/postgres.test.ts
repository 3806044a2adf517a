// The CLI on a PostgreSQL log: a run from one process, `events --follow` in another sees what a third appends.
import { describe, expect, it } from "vitest";
import { describeWithPostgres, usePostgresDatabase } from "../support/postgres.ts";
import { cli, jsonLines, startCli } from "./support.ts";

type EventJson = { position: number; streamId: string; type: string };

describeWithPostgres("the command line on PostgreSQL", () => {
  const db = usePostgresDatabase("actorzero_cli");

  describe("when one process follows the log while others write to it", () => {
    it("prints the stored events, then each new one as it is appended, and stops on Ctrl-C", async () => {
      const store = ["--store", db.url()];
      const first = await cli(["run", "--json", ...store, "Plan a picnic"]);
      expect(first.code, first.stderr).toBe(0);
      const { contextId } = JSON.parse(first.stdout) as { contextId: string };
      expect(first.stdout).not.toContain(new URL(db.url()).password || "no-password-in-url");

      const follower = startCli(["events", "--follow", "--json", ...store]);
      await follower.waitForLine(/"type":"RunCompleted"/);
      const sent = await cli(["send", contextId.slice(0, 8), "And if it rains?", "--json", ...store]);
      expect(sent.code, sent.stderr).toBe(0);
      const runId = (JSON.parse(sent.stdout) as { runId: string }).runId;
      await follower.waitForLine(
        new RegExp(`"type":"RunCompleted".*"runId":"${runId}"|"runId":"${runId}".*"type":"RunCompleted"`),
      );
      follower.child.kill("SIGINT");
      const followed = await follower.done;
      expect(followed.code, followed.stderr).toBe(0);
      expect(followed.stderr).toContain("following PostgreSQL at");

      const all = jsonLines<EventJson>((await cli(["events", "--json", ...store])).stdout);
      expect(jsonLines<EventJson>(followed.stdout).map((e) => e.position)).toEqual(all.map((e) => e.position));
    });
  });
});
