// The page's only way to the server: JSON calls with the bearer token, and the log as Server-Sent Events over fetch
// (EventSource cannot send an Authorization header). Every failure becomes an ApiError the page shows.

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

const TOKEN_KEY = "actorzero.token";
export const getToken = () => sessionStorage.getItem(TOKEN_KEY) ?? "";
export const setToken = (t) => (t ? sessionStorage.setItem(TOKEN_KEY, t) : sessionStorage.removeItem(TOKEN_KEY));

const headers = (extra = {}) => {
  const t = getToken();
  return t ? { ...extra, authorization: `Bearer ${t}` } : extra;
};

export const call = async (method, path, body) => {
  let res;
  try {
    res = await fetch(path, {
      method,
      // Every write says it is JSON, a body or not: the server refuses any other write (415).
      headers: headers(method === "GET" ? {} : { "content-type": "application/json" }),
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  } catch (e) {
    throw new ApiError(0, "network", `the server did not answer (${e.message})`);
  }
  const text = await res.text();
  let json = null;
  try {
    json = text === "" ? null : JSON.parse(text);
  } catch {
    throw new ApiError(
      res.status,
      "bad_response",
      `${method} ${path} answered ${res.status} with something that is not JSON`,
    );
  }
  if (!res.ok)
    throw new ApiError(
      res.status,
      json?.error?.code ?? "error",
      json?.error?.message ?? `${method} ${path} answered ${res.status}`,
    );
  return json;
};

/**
 * Follows the log from `after`: calls onEvent(event) for each, in order, and reconnects where it left off
 * (the last id seen) after a dropped connection. Returns stop().
 */
export const follow = (after, { onEvent, onState }) => {
  let last = after;
  let stopped = false;
  let controller = null;
  let retry = null;
  const connect = async () => {
    if (stopped) return;
    controller = new AbortController();
    try {
      const res = await fetch(`/v1/events/stream?after=${last}`, { headers: headers(), signal: controller.signal });
      if (!res.ok) {
        const j = await res.json().catch(() => null);
        throw new ApiError(
          res.status,
          j?.error?.code ?? "error",
          j?.error?.message ?? `the event stream answered ${res.status}`,
        );
      }
      onState("live", null);
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = "";
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        buffer += value;
        let i;
        while ((i = buffer.indexOf("\n\n")) >= 0) {
          const block = buffer.slice(0, i);
          buffer = buffer.slice(i + 2);
          let id = null;
          let data = "";
          for (const line of block.split("\n")) {
            if (line.startsWith("id:")) id = line.slice(3).trim();
            else if (line.startsWith("data:")) data += line.slice(5).trim();
          }
          if (id === null || data === "") continue;
          last = Number(id);
          onEvent(JSON.parse(data));
        }
      }
      if (!stopped) onState("reconnecting", null);
    } catch (e) {
      if (stopped) return;
      if (e instanceof ApiError && e.status === 401) {
        onState("offline", e);
        return;
      }
      onState("reconnecting", e instanceof ApiError ? e : null);
    }
    if (!stopped) retry = setTimeout(connect, 1000);
  };
  void connect();
  return () => {
    stopped = true;
    clearTimeout(retry);
    controller?.abort();
  };
};
