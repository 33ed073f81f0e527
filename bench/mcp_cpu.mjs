// bench/mcp_cpu.mjs: the server's CPU per tools/call of a few queries, each
// query in a fresh `BIN mcp --root ROOT` (20 warm-up calls, then N timed):
// stat_cpu_ms_per_call from /proc/PID/stat (all threads, exited ones too;
// 10 ms ticks, so N large), live_threads_cpu_ms_per_call from each live
// thread's schedstat (ns; the grep workers that exited are not in it), and
// the wall time per call. Compare two builds by running them alternately,
// the order swapped each round, on the same machine:
//
//   for i in 1 2 3 4; do for b in OLD NEW; do node bench/mcp_cpu.mjs $b WS 300; done; done
//
// WS: a workspace from the shared harness's gen_workspace.mjs (tree/, small/).
// A fifth argument runs only the query of that name.
import { spawn } from "node:child_process";
import fs from "node:fs";

const [bin, root, n] = [process.argv[2], process.argv[3], +process.argv[4] || 300];
const Q = [
  ["grep_200", "grep", { pattern: "e", max_results: 200 }], // the match set printed: JSON and text
  ["grep_ctx_50", "grep", { pattern: "e", max_results: 50, context: 2 }],
  ["glob_all", "glob", { pattern: "**" }], // the entry set printed
  ["read_small", "read_file", { path: "small/s001.txt" }], // a result that holds nothing
];
const ticks = (pid) => { const f = fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" "); return (+f[11] + +f[12]) * 10; };
const live = (pid) => {
  let ns = 0;
  for (const t of fs.readdirSync(`/proc/${pid}/task`)) {
    try { ns += +fs.readFileSync(`/proc/${pid}/task/${t}/schedstat`, "utf8").split(" ")[0]; } catch {}
  }
  return ns / 1e6;
};
const out = {};
for (const [name, tool, args] of Q.filter((q) => !process.argv[5] || q[0] === process.argv[5])) {
  const p = spawn(bin, ["mcp", "--root", root], { stdio: ["pipe", "pipe", "ignore"] });
  let buf = "", waiting = null;
  p.stdout.on("data", (d) => {
    buf += d;
    let i;
    while ((i = buf.indexOf("\n")) >= 0) { const l = buf.slice(0, i); buf = buf.slice(i + 1); const w = waiting; waiting = null; w(l); }
  });
  const rpc = (id, method, params) => new Promise((res) => { waiting = res; p.stdin.write(JSON.stringify({ jsonrpc: "2.0", id, method, params }) + "\n"); });
  await rpc(1, "initialize", { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "mcp_cpu", version: "1" } });
  p.stdin.write(JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }) + "\n");
  for (let i = 0; i < 20; i++) await rpc(10 + i, "tools/call", { name: tool, arguments: args });
  const k0 = ticks(p.pid), c0 = live(p.pid), t0 = performance.now();
  let len = 0;
  for (let i = 0; i < n; i++) {
    const l = await rpc(100 + i, "tools/call", { name: tool, arguments: args });
    if (l.includes('"isError":true')) throw new Error(l.slice(0, 300));
    len = l.length;
  }
  out[name] = { live_threads_cpu_ms_per_call: (live(p.pid) - c0) / n, stat_cpu_ms_per_call: (ticks(p.pid) - k0) / n,
    wall_ms_per_call: (performance.now() - t0) / n, reply_bytes: len };
  p.kill();
}
console.log(JSON.stringify(out));
