// Runs the store contract against PGlite in memory and on disk.
import { freshPgliteStore } from "../support/pglite.ts";
import { storeContract } from "./storeContract.ts";

storeContract("PGlite in memory", ({ now }) => freshPgliteStore({ inMemory: true, ...(now ? { now } : {}) }));
storeContract("PGlite on disk", ({ now }) => freshPgliteStore({ ...(now ? { now } : {}) }));
