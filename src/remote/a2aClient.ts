// An A2A client (the SDK's, JSON-RPC transport) for a URL, with headers (credentials, traceparent) added to every request.
// Its own folder, below the runtime: the runtime's remote subordinates and the protocol tests both use it.
import { Role, TaskState, type Message, type Part } from "@a2a-js/sdk";
import {
  type Client,
  ClientFactory,
  ClientFactoryOptions,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
} from "@a2a-js/sdk/client";

/** A client of the agent whose card is at `<url>/.well-known/agent-card.json`; `headers()` is asked per request. */
export const a2aClient = async (
  url: string,
  headers: () => Record<string, string> = () => ({}),
  signal?: AbortSignal,
): Promise<Client> => {
  const fetchImpl: typeof fetch = (input, init) => {
    const merged = new Headers(init?.headers);
    for (const [k, v] of Object.entries(headers())) merged.set(k, v);
    return fetch(input, { ...init, headers: merged, ...(signal && !init?.signal ? { signal } : {}) });
  };
  const options = ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
    transports: [new JsonRpcTransportFactory({ fetchImpl })],
    cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
  });
  return new ClientFactory(options).createFromUrl(url);
};

const textPart = (text: string): Part => ({
  content: { $case: "text", value: text },
  metadata: undefined,
  filename: "",
  mediaType: "text/plain",
});

/** A user's text message, in a context when `contextId` is given (else the agent starts one). */
export const userMessage = (text: string, messageId: string, contextId = "", taskId = ""): Message => ({
  messageId,
  contextId,
  taskId,
  role: Role.ROLE_USER,
  parts: [textPart(text)],
  metadata: undefined,
  extensions: [],
  referenceTaskIds: [],
});

/** The text of text parts, joined (other parts are not read). */
export const partsText = (parts: readonly Part[]): string =>
  parts
    .map((p) => (p.content?.$case === "text" ? p.content.value : ""))
    .filter((t) => t !== "")
    .join("\n");

/** A task state as the spec writes it in v0.3 and in prose: `working`, `input-required`, … */
export const stateName = (state: TaskState): string =>
  (TaskState[state] ?? "unspecified")
    .replace(/^TASK_STATE_/, "")
    .toLowerCase()
    .replace(/_/g, "-");

export const TERMINAL: readonly TaskState[] = [
  TaskState.TASK_STATE_COMPLETED,
  TaskState.TASK_STATE_FAILED,
  TaskState.TASK_STATE_CANCELED,
  TaskState.TASK_STATE_REJECTED,
];
