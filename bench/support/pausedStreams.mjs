// Opens N event streams on a server and never reads them, in a process of its own so their buffers are not
// counted in the server's RSS. Prints "ready" once every stream has answered 200; stays until killed.
// Usage: node pausedStreams.mjs <url> <count>
import http from "node:http";

const [url, count] = [process.argv[2], Number(process.argv[3])];
const agent = new http.Agent({ keepAlive: false, maxSockets: Infinity });
const answered = await Promise.all(
  Array.from(
    { length: count },
    () =>
      new Promise((resolve, reject) => {
        const req = http.get(url, { agent }, (res) => resolve(res.statusCode));
        req.once("error", reject);
      }),
  ),
);
const bad = answered.filter((s) => s !== 200);
if (bad.length > 0) {
  console.error(`streams answered ${bad.join(", ")}`);
  process.exit(1);
}
console.log("ready");
setInterval(() => {}, 1 << 30);
