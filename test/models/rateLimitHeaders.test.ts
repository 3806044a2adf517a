// How long a 429 says to wait: Retry-After first, else the reset of the limit that ran out (OpenAI's x-ratelimit headers).
import { describe, expect, it } from "vitest";
import { retryAfter } from "../../src/models/openai.ts";

describe("when a 429 names no Retry-After", () => {
  it("waits for the reset of the limit at 0, in the providers' duration format", () => {
    expect(
      retryAfter(
        new Headers({
          "x-ratelimit-remaining-requests": "0",
          "x-ratelimit-reset-requests": "1s",
          "x-ratelimit-remaining-tokens": "500",
          "x-ratelimit-reset-tokens": "6m0s",
        }),
      ),
    ).toBe(1000);
    expect(retryAfter(new Headers({ "x-ratelimit-remaining-tokens": "0", "x-ratelimit-reset-tokens": "1m2.5s" }))).toBe(
      62_500,
    );
    expect(retryAfter(new Headers({ "x-ratelimit-reset-requests": "20ms", "x-ratelimit-reset-tokens": "250ms" }))).toBe(
      250,
    );
  });

  it("prefers Retry-After when there is one, and ignores a reset it cannot read", () => {
    expect(retryAfter(new Headers({ "retry-after-ms": "40", "x-ratelimit-reset-requests": "9s" }))).toBe(40);
    expect(retryAfter(new Headers({ "retry-after": "2", "x-ratelimit-reset-requests": "9s" }))).toBe(2000);
    expect(retryAfter(new Headers({ "x-ratelimit-reset-requests": "soon" }))).toBeUndefined();
    expect(retryAfter(new Headers())).toBeUndefined();
  });
});
