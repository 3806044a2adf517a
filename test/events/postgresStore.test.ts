// Runs the store contract against a PostgreSQL server: the same definition as PGlite's.
import { openPostgresStore } from "../../src/events/postgresStore.ts";
import { describeWithPostgres, usePostgresDatabase } from "../support/postgres.ts";
import { storeContract } from "./storeContract.ts";

describeWithPostgres("PostgreSQL", () => {
  const db = usePostgresDatabase();
  storeContract("PostgreSQL", async ({ fresh, now }) =>
    openPostgresStore({ url: fresh ? await db.fresh() : db.url(), ...(now ? { now } : {}) }),
  );
});
