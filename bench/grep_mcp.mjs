// bench/grep_mcp.mjs: time grep and glob calls to one running `burrow mcp`
// (a raw JSON-RPC client over stdio), so start-up is not counted: the
// latency an agent sees per call, and the server's CPU time for it (from
// /proc/PID/stat). Each MCP call alternates with one run of the query's
// baseline command (rg, or fd for the glob), so both see the same machine
// load; which of the two runs first turns each run. Prints JSON
// {name: {median_ms, cpu_ms, base_ms, runs, total}}.
//
//   node bench/grep_mcp.mjs --bin build/burrow --root TREE --runs 5 --queries Q.jsonl
import { spawn, execSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";

const o = { runs: 5 };
for (let i = 2; i < process.argv.length; i += 2) o[process.argv[i].replace(/^--/, "")] = process.argv[i + 1];
const queries = fs.readFileSync(o.queries, "utf8").trim().split("\n").map((l) => JSON.parse(l));
const caps = ["max_matches=100000000", "max_entries=100000000", "max_result_bytes=4GiB", "max_file_size=1GiB"].flatMap((c) => ["--cap", c]);
const child = spawn(o.bin, ["mcp", "--root", o.root, ...caps], { stdio: ["pipe", "pipe", "ignore"] });

let parts = []; // chunks of the line being received (scan only new bytes)
const waiting = new Map();
child.stdout.on("data", (d) => {
  let i;
  while ((i = d.indexOf(10)) >= 0) {
    parts.push(d.subarray(0, i));
    const msg = JSON.parse(Buffer.concat(parts).toString("utf8"));
    parts = [];
    d = d.subarray(i + 1);
    if (waiting.has(msg.id)) { waiting.get(msg.id)(msg); waiting.delete(msg.id); }
  }
  if (d.length) parts.push(d);
});
// user + system CPU of the server so far, in ms
const HZ = 100; // USER_HZ: clock ticks of /proc/PID/stat on Linux
function cpu() {
  const f = fs.readFileSync(`/proc/${child.pid}/stat`, "utf8");
  const rest = f.slice(f.lastIndexOf(")") + 2).split(" ");
  return (Number(rest[11]) + Number(rest[12])) * (1000 / HZ);
}
let id = 0;
function request(method, params) {
  const n = ++id;
  return new Promise((resolve) => {
    waiting.set(n, resolve);
    child.stdin.write(JSON.stringify({ jsonrpc: "2.0", id: n, method, params }) + "\n");
  });
}

await request("initialize", { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "grep-bench", version: "1" } });
child.stdin.write(JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }) + "\n");

const SCRATCH = `${os.tmpdir()}/burrow-grep-bench-${process.pid}.out`; // like hyperfine's runs: a file
const out = {};
for (const q of queries) {
  const times = [], cpus = [], base = [];
  let total = null;
  const runBase = (r) => {
    const b0 = performance.now();
    execSync(`${q.base} < /dev/null > ${SCRATCH} || true`, { cwd: o.root, shell: "/bin/sh" });
    if (r > 0) base.push(performance.now() - b0);
  };
  for (let r = 0; r <= Number(o.runs); r++) { // run 0 is the warm-up
    // the pair's order turns each run: neither always runs right after the other
    if (q.base && r % 2 === 1) runBase(r);
    const c0 = cpu(), t0 = performance.now();
    const msg = await request("tools/call", { name: q.tool, arguments: { ...q.args, max_results: 100000000 } });
    const ms = performance.now() - t0, cms = cpu() - c0;
    if (msg.error || msg.result.isError) throw new Error(`${q.name}: ${JSON.stringify(msg.error || msg.result.content)}`);
    const s = msg.result.structuredContent;
    total = q.tool === "glob" ? s.entries.length : s.output_mode === "files" ? s.files.length : s.total;
    if (r > 0) times.push(ms), cpus.push(cms);
    if (q.base && r % 2 === 0) runBase(r);
  }
  try { fs.unlinkSync(SCRATCH); } catch {}
  const med = (v) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)];
  out[q.name] = { median_ms: med(times), cpu_ms: med(cpus) || null, base_ms: base.length ? med(base) : null, runs: times, total }; // null: under one tick
}
child.stdin.end();
console.log(JSON.stringify(out));
