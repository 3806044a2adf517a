// Walks a log's seals beside its events, as verifyLog.ts reads them: each seal is recomputed in this code
// (node:crypto) from the events in its range, never by a function stored in the checked database.
import { createHash } from "node:crypto";
import { GENESIS_HASH_HEX } from "./chainSql.ts";
import type { SqlExecutor } from "./store.ts";
import type { LogAnchor } from "./verifyLog.ts";

const SEAL_PAGE = 1000;

type Seal = { up_to: number | string; events: number; hash: string };

const int8 = (n: number): Buffer => {
  const b = Buffer.alloc(8);
  b.writeBigInt64BE(BigInt(n));
  return b;
};

/**
 * Walks the seals beside the events: recomputes each seal from the events in its range, in position
 * order, and compares. A seal's problem is reported at its own position (`up_to`).
 */
export class SealWalk {
  /** Every seal's hash by position, as stored (for anchors). */
  readonly seen = new Map<number, string>();
  head: { position: number; hash: string | null } = { position: 0, hash: null };
  unsealed = 0;
  #queue: Seal[] = [];
  #after: number;
  #done = false;
  #prev = GENESIS_HASH_HEX;
  #lower = 0;
  #hash: ReturnType<typeof createHash> | undefined;
  #count = 0;

  constructor(
    private readonly tx: SqlExecutor,
    private readonly enabled: boolean,
    private readonly report: (p: number | null, s: string) => void,
    private readonly from: LogAnchor | undefined,
  ) {
    this.#after = from?.position ?? 0;
    this.#lower = this.#after;
    if (from) {
      this.#prev = from.hash;
      this.head = { ...from };
    }
  }

  /** The seal `from` names is still there, with the same hash. */
  async checkStart() {
    if (!this.enabled || !this.from) return;
    const row = (
      await this.tx.query<{ hash: string }>(
        "SELECT encode(hash, 'hex') AS hash FROM actorzero_seals WHERE up_to = $1",
        [this.from.position],
      )
    ).rows[0];
    if (row?.hash !== this.from.hash) {
      this.report(
        this.from.position,
        row
          ? `the seal checked before at this position now has another hash: the seals were rewritten`
          : "the seal checked before at this position was deleted",
      );
    }
  }

  async #next(): Promise<Seal | undefined> {
    if (this.#queue.length === 0 && !this.#done) {
      const { rows } = await this.tx.query<Seal>(
        "SELECT up_to, events, encode(hash, 'hex') AS hash FROM actorzero_seals WHERE up_to > $1 ORDER BY up_to LIMIT $2",
        [this.#after, SEAL_PAGE],
      );
      this.#queue = rows;
      if (rows.length < SEAL_PAGE) this.#done = true;
      if (rows.length > 0) this.#after = Number(rows.at(-1)!.up_to);
    }
    return this.#queue[0];
  }

  async add(position: number, hash: string | null) {
    if (!this.enabled) return;
    for (let seal = await this.#next(); seal && position > Number(seal.up_to); seal = await this.#next())
      this.#close(seal);
    const seal = this.#queue[0];
    if (!seal) {
      this.unsealed += 1;
      return;
    }
    this.#hash ??= createHash("sha256")
      .update(Buffer.from(this.#prev, "hex"))
      .update(int8(Number(seal.up_to)));
    this.#hash.update(int8(position));
    if (hash !== null) this.#hash.update(Buffer.from(hash, "hex"));
    this.#count += 1;
  }

  /** Closes the seals left after the last event: a seal past the log's end lost its events. */
  async finish(lastPosition: number) {
    if (!this.enabled) return;
    for (let seal = await this.#next(); seal; seal = await this.#next()) {
      if (Number(seal.up_to) > lastPosition && this.#count === 0) {
        this.report(
          Number(seal.up_to),
          `a seal covers positions up to ${seal.up_to}, past the log's last event (${lastPosition}): events were removed from the log`,
        );
      }
      this.#close(seal);
    }
  }

  #close(seal: Seal) {
    const upTo = Number(seal.up_to);
    const hash = (this.#hash ?? createHash("sha256").update(Buffer.from(this.#prev, "hex")).update(int8(upTo))).digest(
      "hex",
    );
    if (hash !== seal.hash || this.#count !== Number(seal.events)) {
      this.report(
        upTo,
        `the seal over positions ${this.#lower + 1} to ${upTo} does not match the events there (${this.#count} now, ${seal.events} sealed): an event in that range was deleted, inserted, moved, or its hash changed`,
      );
    }
    this.seen.set(upTo, seal.hash);
    this.head = { position: upTo, hash: seal.hash };
    this.#prev = seal.hash;
    this.#lower = upTo;
    this.#hash = undefined;
    this.#count = 0;
    this.#queue.shift();
  }
}
