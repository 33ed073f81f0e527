// bench/startup.mjs: spawn `BIN mcp --root ROOT` RUNS times and time each
// from spawn to the initialize result (raw JSON-RPC, no SDK), printing the
// median and minimum in ms. Usage: node bench/startup.mjs BIN RUNS ROOT
// (an installed binary loads precompiled Lua: see docs/benchmarks.md, Start-up).
import { spawn } from "node:child_process";
const bin = process.argv[2], runs = +process.argv[3] || 30, root = process.argv[4];
const times = [];
for (let i = 0; i < runs; i++) {
  const t0 = process.hrtime.bigint();
  const p = spawn(bin, ["mcp", "--root", root], { stdio: ["pipe", "pipe", "ignore"] });
  await new Promise((res) => {
    let buf = "";
    p.stdout.on("data", (d) => { buf += d; if (buf.includes('"id":1')) { times.push(Number(process.hrtime.bigint() - t0) / 1e6); p.kill(); res(); } });
    p.stdin.write(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } } }) + "\n");
  });
}
times.sort((a, b) => a - b);
console.log(bin, "initialize median", times[runs >> 1].toFixed(2), "ms, min", times[0].toFixed(2));
