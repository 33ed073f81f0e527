// bench/read_cpu.mjs: N whole reads of big.txt (limit 1000000, caps raised) through one
// `BIN mcp --root ROOT` with a raw JSON-RPC client; prints the wall median, the
// server's CPU per read (from /proc/PID/stat) and its peak RSS (VmHWM).
// Usage: node bench/read_cpu.mjs BIN ROOT N
import { spawn } from "node:child_process";
import fs from "node:fs";
const cpu = (pid) => { const f = fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" "); return (+f[11] + +f[12]) * 10; };
const [bin, root, n] = [process.argv[2], process.argv[3], +process.argv[4] || 5];
const p = spawn(bin, ["mcp", "--root", root, "--cap", "max_result_bytes=64MiB", "--cap", "max_file_size=64MiB"], { stdio: ["pipe", "pipe", "ignore"] });
let parts = [], size = 0, waiting = null;
p.stdout.on("data", (d) => {
  let i;
  while ((i = d.indexOf(10)) >= 0) {
    parts.push(d.subarray(0, i)); size += i; d = d.subarray(i + 1);
    const len = size; parts = []; size = 0;
    if (waiting) { const w = waiting; waiting = null; w(len); }
  }
  parts.push(d); size += d.length;
});
const rpc = (id, method, params) => new Promise((res) => { waiting = res; p.stdin.write(JSON.stringify({ jsonrpc: "2.0", id, method, params }) + "\n"); });
await rpc(1, "initialize", { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } });
p.stdin.write(JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }) + "\n");
const ts = []; let bytes = 0; const c0 = cpu(p.pid);
for (let i = 0; i < n; i++) { const t0 = process.hrtime.bigint(); bytes = await rpc(10 + i, "tools/call", { name: "read_file", arguments: { path: "big.txt", limit: 1000000 } }); ts.push(Number(process.hrtime.bigint() - t0) / 1e6); }
const c1 = cpu(p.pid); const hwm = fs.readFileSync(`/proc/${p.pid}/status`, "utf8").match(/VmHWM:\s+(\d+)/)[1]; p.kill(); ts.sort((a, b) => a - b);
console.log(bin, "whole 50 MiB read: median", ts[n >> 1].toFixed(1), "ms, min", ts[0].toFixed(1), "ms; server CPU per read", ((c1 - c0) / n).toFixed(1), "ms,", bytes, "bytes, peak RSS", hwm, "KiB");
