// The A2A client lives below the runtime (src/remote/), which sends remote subordinates' tasks with it.
export { a2aClient, userMessage } from "../remote/a2aClient.ts";
