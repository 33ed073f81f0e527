// bench/validator.mjs: what read_file's validator costs and saves, through
// one `BIN mcp --root WS` per binary with a raw JSON-RPC client (caps raised
// as for bench.mjs's whole read). For a small file (WS/small/s000.txt) and
// WS/big.txt (50 MiB): a full read, and (when the build has if_none_match)
// the same read presenting the hash it returned: median wall time, the
// server's CPU per call (/proc/PID/stat, all threads) and reply bytes. The
// big file's first not-modified read in a fresh process (facts not cached
// yet: one pass for hash and scan) is timed on its own. With --base, main's
// build does the full reads in the same run, alternating, for the overhead.
//
//   node bench/validator.mjs --ws WS [--bin build/burrow] [--base OTHER] [--n 200] [--big 7]
import { spawn } from "node:child_process";
import fs from "node:fs";

const o = { ws: null, bin: "build/burrow", base: null, n: 200, big: 7 };
const a = process.argv.slice(2);
for (let i = 0; i < a.length; i++) {
  const k = a[i].replace(/^--/, ""), v = a[++i];
  if (!(k in o)) { console.error("unknown option --" + k); process.exit(2); }
  o[k] = typeof o[k] === "number" ? +v : v;
}
if (!o.ws) { console.error("usage: see the header"); process.exit(2); }

const cpu = (pid) => { const f = fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" "); return (+f[11] + +f[12]) * 10; };
const median = (xs) => { const s = [...xs].sort((x, y) => x - y); return s[s.length >> 1]; };

/** A server and rpc(method, params) -> {ms, bytes, msg}. */
async function server(bin) {
  const p = spawn(bin, ["mcp", "--root", o.ws, "--cap", "max_result_bytes=64MiB", "--cap", "max_file_size=64MiB"],
    { stdio: ["pipe", "pipe", "ignore"] });
  let parts = [], waiting = null, id = 0;
  p.stdout.on("data", (d) => {
    let i;
    while ((i = d.indexOf(10)) >= 0) {
      parts.push(d.subarray(0, i)); d = d.subarray(i + 1);
      const line = Buffer.concat(parts); parts = [];
      if (waiting) { const w = waiting; waiting = null; w(line); }
    }
    if (d.length) parts.push(d);
  });
  const rpc = (method, params) => new Promise((res) => {
    const t0 = process.hrtime.bigint();
    waiting = (line) => res({ ms: Number(process.hrtime.bigint() - t0) / 1e6, bytes: line.length, line });
    p.stdin.write(JSON.stringify({ jsonrpc: "2.0", id: ++id, method, params }) + "\n");
  });
  await rpc("initialize", { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "bench", version: "1" } });
  p.stdin.write(JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }) + "\n");
  const call = (args) => rpc("tools/call", { name: "read_file", arguments: args });
  return { p, call, stop: () => p.kill() };
}

/** n calls of args: median ms, CPU ms per call, bytes of the last reply. */
async function measure(s, args, n) {
  const ts = []; let bytes = 0; const c0 = cpu(s.p.pid);
  for (let i = 0; i < n; i++) { const r = await s.call(args); ts.push(r.ms); bytes = r.bytes; }
  return { ms: median(ts), cpu: (cpu(s.p.pid) - c0) / n, bytes };
}

const hashOf = (line) => JSON.parse(line).result.structuredContent.content_hash;
const SMALL = { path: "small/s000.txt" }, BIG = { path: "big.txt", limit: 1000000 };
const rows = [];
const row = (what, m) => rows.push(`| ${what} | ${m.ms.toFixed(2)} | ${m.cpu.toFixed(2)} | ${m.bytes} |`);

for (const [name, bin] of [["this build", o.bin], ...(o.base ? [["base", o.base]] : [])]) {
  const s = await server(bin);
  const first = await s.call(SMALL);
  await measure(s, SMALL, 50); // warm-up
  row(`${name}: small file, full read`, await measure(s, SMALL, o.n));
  const probe = await s.call({ ...SMALL, if_none_match: hashOf(first.line) });
  const hasValidator = !JSON.parse(probe.line).result.isError;
  if (hasValidator) row(`${name}: small file, if_none_match (not modified)`, await measure(s, { ...SMALL, if_none_match: hashOf(first.line) }, o.n));
  const big = await s.call(BIG);
  row(`${name}: big.txt whole, full read`, await measure(s, BIG, o.big));
  row(`${name}: big.txt 100 lines (facts cached)`, await measure(s, { path: "big.txt", limit: 100 }, o.n));
  if (hasValidator) {
    row(`${name}: big.txt, if_none_match (facts cached)`, await measure(s, { ...BIG, if_none_match: hashOf(big.line) }, o.n));
    s.stop();
    const cold = [];
    for (let i = 0; i < o.big; i++) { // a fresh process each: the facts' pass not cached
      const f = await server(bin);
      cold.push((await f.call({ ...BIG, if_none_match: hashOf(big.line) })).ms);
      f.stop();
    }
    rows.push(`| ${name}: big.txt, if_none_match, first in a process (hash + scan) | ${median(cold).toFixed(2)} | | |`);
  } else s.stop();
}
console.log("| read_file | median ms | server CPU ms/call | reply bytes |\n|---|---|---|---|\n" + rows.join("\n"));
