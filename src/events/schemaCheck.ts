// What opening a store does with the schema it finds: create or upgrade it, take it as it is, or refuse.
import { StoreError } from "./errors.ts";
import { SCHEMA_VERSION } from "./sql.ts";

/**
 * `version`: the stored schema version (null: no schema). `create` (the default) creates or upgrades
 * the schema; `existing` opens only a log that is there, as it is, e.g. to verify it without writing.
 * A newer schema than this code knows is refused either way. `where` names the database in messages.
 */
export const schemaAction = (
  version: number | null,
  schema: "create" | "existing",
  where: string,
): "run-schema-sql" | "ready" => {
  if (version !== null && version > SCHEMA_VERSION) {
    throw new StoreError(
      "refused",
      `the event log schema${where} is at version ${version}, newer than this runtime knows (${SCHEMA_VERSION}); it was left untouched.`,
    );
  }
  if (schema === "existing") {
    if (version !== null) return "ready";
    throw new StoreError(
      "refused",
      `the database${where} holds no actorzero event log (no actorzero_schema_migrations table); it was left untouched.`,
    );
  }
  return version === SCHEMA_VERSION ? "ready" : "run-schema-sql";
};
