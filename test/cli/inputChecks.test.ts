// Bad command-line and config input, tried as a user would: one line naming the flag, field or key, exit 2 for a
// usage error, and nothing written: a refused `run` or `serve` leaves no data dir behind.
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { removeDir } from "../support/pglite.ts";
import { cli, expectOneLineError } from "./support.ts";

let cwd: string;
let dataDir: string;
beforeEach(() => {
  cwd = mkdtempSync(path.join(tmpdir(), "az-input-"));
  dataDir = path.join(cwd, "log");
});
afterEach(async () => {
  await removeDir(cwd);
});

/** A config whose profile folder holds one profile.json with `json` as its content. */
const withProfile = (json: object) => {
  mkdirSync(path.join(cwd, "profiles", "ops"), { recursive: true });
  writeFileSync(path.join(cwd, "profiles", "ops", "profile.json"), JSON.stringify(json));
  writeFileSync(path.join(cwd, "actorzero.config.json"), JSON.stringify({ profiles: ["profiles"] }));
};

describe("when a profile.json has a key no profile has", () => {
  it("then run and serve refuse it, naming the key and the file, and create no data dir", async () => {
    withProfile({ title: "Ops", needsAproval: ["deploy"] });
    for (const args of [
      ["run", "do it", "--offline"],
      ["serve", "--offline", "--port", "0"],
    ]) {
      const r = await cli([...args, "--data-dir", dataDir], { cwd });
      expect(r.code).toBe(1);
      const line = expectOneLineError(r);
      expect(line).toContain("unknown key 'needsAproval'");
      expect(line).toContain(path.join("profiles", "ops", "profile.json"));
      expect(existsSync(dataDir)).toBe(false);
    }
  });
});

describe("when run names a profile that does not exist", () => {
  it("then it is refused with the profiles there are, before the data dir is created", async () => {
    const r = await cli(["run", "do it", "--offline", "--profile", "nosuch", "--data-dir", dataDir], { cwd });
    expect(r.code).toBe(1);
    expect(expectOneLineError(r)).toMatch(/profile 'nosuch' not found.*default/);
    expect(existsSync(dataDir)).toBe(false);
  });
});

describe("when serve's --port is out of range or not a number", () => {
  it.each([["99999"], ["65536"], ["abc"], ["-1"]])(
    "then --port %s is a usage error naming --port, and no data dir is made",
    async (port) => {
      const r = await cli(["serve", "--offline", "--port", port, "--data-dir", dataDir], { cwd });
      expect(r.code).toBe(2);
      expect(expectOneLineError(r)).toContain("--port takes a port number from 0 to 65535");
      expect(existsSync(dataDir)).toBe(false);
    },
  );
});

describe("when a command is given an argument it does not take", () => {
  it.each([
    ["serve", "now"],
    ["mcp", "now"],
    ["contexts", "extra"],
  ])("then `%s %s` is a usage error naming the argument", async (command, extra) => {
    const r = await cli([command, extra, "--data-dir", dataDir], { cwd });
    expect(r.code).toBe(2);
    expect(expectOneLineError(r)).toContain(`unexpected argument '${extra}' (${command} takes none)`);
    expect(existsSync(dataDir)).toBe(false);
  });
});

describe("when fork is given no --at", () => {
  it("then it is a usage error naming --at, not a schema message", async () => {
    const r = await cli(["fork", "1a2b3c4d", "--data-dir", dataDir], { cwd });
    expect(r.code).toBe(2);
    const line = expectOneLineError(r);
    expect(line).toContain("fork needs --at <position>");
    expect(line).not.toContain("undefined");
  });
});

describe("when approve's --by is longer than a name may be", () => {
  it("then it is a usage error naming --by and its limit", async () => {
    const r = await cli(["approve", "1a2b3c4d", "--by", "x".repeat(300), "--data-dir", dataDir], { cwd });
    expect(r.code).toBe(2);
    expect(expectOneLineError(r)).toContain("--by takes a name of at most 100 characters");
    const empty = await cli(["approve", "1a2b3c4d", "--by", " ", "--data-dir", dataDir], { cwd });
    expect(empty.code).toBe(2);
    expect(expectOneLineError(empty)).toContain("--by needs a name");
  });
});
