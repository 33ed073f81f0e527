// bench/big_bytes.mjs: the whole-file read of WS/big.txt (limit 1,000,000
// lines) over MCP stdio, timed by a client that only counts the bytes: the
// first and the last byte of each reply, medians over RUNS. What the server
// and the pipe cost, without the harness's own work on the reply (joining
// its chunks, decoding and parsing 57 MB), which dominates bench.mjs's
// figure on some machines (docs/benchmarks.md).
//
//   node bench/big_bytes.mjs BIN WS [RUNS]
import { spawn } from "node:child_process";

const [bin, ws, runsArg] = process.argv.slice(2);
if (!bin || !ws) { console.error("usage: node bench/big_bytes.mjs BIN WS [RUNS]"); process.exit(2); }
const runs = +runsArg || 10;
const p = spawn(bin, ["mcp", "--root", ws, "--cap", "max_result_bytes=64MiB", "--cap", "max_file_size=64MiB"],
  { stdio: ["pipe", "pipe", "ignore"] });
let t0 = 0, first = 0, done = null;
p.stdout.on("data", (d) => {
  if (!first) first = performance.now();
  if (d[d.length - 1] === 10 && done) { const r = done; done = null; r(performance.now()); }
});
const send = (m) => p.stdin.write(JSON.stringify({ jsonrpc: "2.0", ...m }) + "\n");
const call = (m) => new Promise((res) => { done = res; first = 0; t0 = performance.now(); send(m); });
await call({ id: 0, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "big_bytes", version: "1" } } });
send({ method: "notifications/initialized" });
const fb = [], lb = [];
for (let i = 0; i < runs; i++) {
  const end = await call({ id: i + 1, method: "tools/call", params: { name: "read_file", arguments: { path: "big.txt", limit: 1000000 } } });
  fb.push(first - t0);
  lb.push(end - t0);
}
const med = (a) => a.slice().sort((x, y) => x - y)[a.length >> 1];
console.log(`first byte median ${med(fb).toFixed(1)} ms, last byte median ${med(lb).toFixed(1)} ms ` +
  `(all last: ${lb.map((x) => x.toFixed(0)).join(" ")})`);
p.stdin.end();
