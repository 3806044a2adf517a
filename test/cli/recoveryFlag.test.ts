// `--recovery` on the commands that drive runs: offered by run, send and serve, refused with one clear line when wrong.
import { describe, expect, it } from "vitest";
import { cli, expectOneLineError } from "./support.ts";

describe("--recovery", () => {
  it("is offered by run, send and serve, with resume as the default", async () => {
    for (const command of ["run", "send", "serve"]) {
      const help = await cli([command, "--help"]);
      expect(help.code).toBe(0);
      expect(help.stdout, command).toMatch(
        /--recovery <mode> +runs a killed process left unfinished: resume them \(default\) or interrupt them/,
      );
    }
  });

  it("takes only resume or interrupt: anything else exits 2 with the reason, before the log is opened", async () => {
    const r = await cli(["run", "a task", "--recovery", "later", "--store", "memory", "--offline"]);
    expect(r.code).toBe(2);
    expect(expectOneLineError(r)).toContain("--recovery must be resume or interrupt");
  });
});
