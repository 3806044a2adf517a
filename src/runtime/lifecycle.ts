// Whether the runtime is closed: the one flag each part asks before it starts anything new, set once by close().
import { RuntimeError } from "./errors.ts";

export class Lifecycle {
  #closed = false;

  get closed(): boolean {
    return this.#closed;
  }

  close(): void {
    this.#closed = true;
  }

  assertOpen(): void {
    if (this.#closed) throw new RuntimeError("closed", "The runtime is closed.");
  }
}
