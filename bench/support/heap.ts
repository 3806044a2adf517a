// Heap measurement with a forced full GC (exposed at run time, so `npm run bench` needs no node flag).
import v8 from "node:v8";
import vm from "node:vm";

v8.setFlagsFromString("--expose-gc");
const gc = vm.runInNewContext("gc") as () => void;

export const heapUsed = async (): Promise<number> => {
  for (let i = 0; i < 3; i++) {
    gc();
    await new Promise((r) => setTimeout(r, 10));
  }
  return process.memoryUsage().heapUsed;
};
