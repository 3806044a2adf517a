// Small helpers for tests that coordinate with a running agent.

/** A promise you resolve from outside: a scripted model can wait on it to hold a run mid-call. */
export const gate = <T = void>() => {
  let open!: (value: T) => void;
  const promise = new Promise<T>((r) => (open = r));
  return { promise, open };
};

/** Polls `check` until it returns a truthy value, failing after `timeoutMs`. */
export const eventually = async <T>(
  check: () => T | Promise<T>,
  timeoutMs = 10_000,
  what = "condition",
): Promise<NonNullable<T>> => {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v) return v as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
};

/**
 * Waits for `promise` at most `ms` and says whether it settled (resolved or rejected). Used where a test must
 * not hang on a run that is stuck by its own fault (teardown, or "this send must settle"): the bound is a
 * failure budget, never the synchronisation itself.
 */
export const settledWithin = async (promise: Promise<unknown>, ms: number): Promise<"settled" | "pending"> => {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const pending = new Promise<"pending">((r) => (timer = setTimeout(() => r("pending"), ms)));
  try {
    return await Promise.race([
      promise.then(
        () => "settled" as const,
        () => "settled" as const,
      ),
      pending,
    ]);
  } finally {
    clearTimeout(timer);
  }
};
