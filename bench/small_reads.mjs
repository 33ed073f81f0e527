// bench/small_reads.mjs: only the small-read part of the shared harness
// (bench.mjs, section (a)), burrow against the official server in the same
// run, alternating, ROUNDS times; medians over rounds and the ratio. The
// same raw JSON-RPC client and measures as bench.mjs: 50 warm-up calls,
// then N sequential reads of WS/small/* (latency from send to parsed
// reply; calls/s over the loop; the server's CPU per call, all its threads,
// from /proc/PID/task/*/schedstat), then N with 16 in flight.
//
//   node bench/small_reads.mjs --ws WS --harness H [--n 2000] [--rounds 3]
//        [--burrow BIN] [--base BIN] [--only burrow|official] [--wrap 'perf record -g -o F']
//
// WS: a workspace from H/gen_workspace.mjs; H: the harness with its
// node_modules (npm ci), for the official server. --wrap puts a command
// (split on spaces) in front of burrow's, e.g. perf record. --base: a second
// burrow binary (say, main's build) measured in the same rounds.
import { spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { performance } from "node:perf_hooks";

const o = { ws: null, harness: null, n: 2000, rounds: 3, burrow: "build/burrow", base: null, only: null, wrap: "", warmup: 50, conc: 16 };
const a = process.argv.slice(2);
for (let i = 0; i < a.length; i++) {
  const k = a[i].replace(/^--/, ""), v = a[++i];
  if (!(k in o)) { console.error("unknown option --" + k); process.exit(2); }
  o[k] = typeof o[k] === "number" ? +v : v;
}
if (!o.ws || (!o.harness && o.only !== "burrow")) { console.error("usage: see the header"); process.exit(2); }

const SERVERS = {
  official: () => ({ cmd: ["node", path.join(o.harness, "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"), o.ws],
                     tool: "read_text_file", args: (p) => ({ path: p }) }),
  burrow: () => burrowServer(o.burrow),
  base: () => burrowServer(o.base),
};
function burrowServer(bin) {
  return { cmd: [...(o.wrap ? o.wrap.split(" ") : []), path.resolve(bin), "mcp", "--root", o.ws,
                 "--cap", "max_result_bytes=64MiB", "--cap", "max_file_size=64MiB"],
           tool: "read_file", args: (p) => ({ path: p, limit: 1000000 }) };
}

function client(cmd) {
  const proc = spawn(cmd[0], cmd.slice(1), { stdio: ["pipe", "pipe", "ignore"] });
  const pending = new Map();
  let next = 1, chunks = [];
  proc.stdout.on("data", (chunk) => {
    let start = 0;
    for (;;) {
      const nl = chunk.indexOf(10, start);
      if (nl < 0) { if (start < chunk.length) chunks.push(chunk.subarray(start)); return; }
      const piece = chunk.subarray(start, nl);
      const buf = chunks.length ? Buffer.concat([...chunks, piece]) : piece;
      chunks = [];
      start = nl + 1;
      const msg = JSON.parse(buf.toString("utf8"));
      const p = pending.get(msg.id);
      if (p && (msg.result !== undefined || msg.error !== undefined)) {
        pending.delete(msg.id);
        p.res({ msg, ms: performance.now() - p.t });
      }
    }
  });
  const send = (obj) => proc.stdin.write(JSON.stringify(obj) + "\n");
  const request = (method, params) => new Promise((res) => {
    const id = next++;
    pending.set(id, { res, t: performance.now() });
    send({ jsonrpc: "2.0", id, method, params });
  });
  return { proc, send, request };
}

// CPU time of a process so far (ns, all its threads; Linux schedstat)
const cpuNs = (pid) => {
  try {
    return readdirSync(`/proc/${pid}/task`).reduce((n, t) => n + +readFileSync(`/proc/${pid}/task/${t}/schedstat`, "utf8").split(" ")[0], 0);
  } catch { return NaN; }
};
const median = (xs) => { const s = [...xs].sort((x, y) => x - y); const n = s.length; return n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2; };
const q = (xs, p) => { const s = [...xs].sort((x, y) => x - y); return s[Math.min(s.length - 1, Math.max(0, Math.ceil(p * s.length) - 1))]; };

async function run(name) {
  const s = SERVERS[name]();
  const c = client(s.cmd);
  const init = await c.request("initialize", { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "small-reads", version: "1" } });
  if (init.msg.error) throw new Error(name + ": initialize failed");
  c.send({ jsonrpc: "2.0", method: "notifications/initialized" });
  const files = readdirSync(path.join(o.ws, "small")).sort().map((f) => path.join(o.ws, "small", f));
  const call = async (i) => {
    const r = await c.request("tools/call", { name: s.tool, arguments: s.args(files[i % files.length]) });
    if (r.msg.error || r.msg.result?.isError) throw new Error(name + ": read failed: " + JSON.stringify(r.msg));
    return r.ms;
  };
  for (let i = 0; i < o.warmup; i++) await call(i);
  const lat = [];
  const cpu0 = cpuNs(c.proc.pid);
  let t = performance.now();
  for (let i = 0; i < o.n; i++) lat.push(await call(i));
  const seq = o.n / ((performance.now() - t) / 1000);
  const cpu = (cpuNs(c.proc.pid) - cpu0) / o.n / 1000; // the server's CPU per call, µs
  let k = 0;
  t = performance.now();
  await Promise.all(Array.from({ length: o.conc }, async () => { while (k < o.n) await call(k++); }));
  const par = o.n / ((performance.now() - t) / 1000);
  c.proc.stdin.end();
  await new Promise((res) => c.proc.on("exit", res));
  return { seq, par, median: median(lat), p99: q(lat, 0.99), cpu };
}

const names = o.only ? [...(o.only === "burrow" && o.base ? ["base"] : []), o.only] : ["official", ...(o.base ? ["base"] : []), "burrow"]; // --only burrow --base: the two builds, no harness needed
const got = Object.fromEntries(names.map((n) => [n, []]));
for (let r = 0; r < o.rounds; r++)
  for (const n of names) {
    const x = await run(n);
    got[n].push(x);
    console.log(`round ${r + 1} ${n}: ${x.seq.toFixed(0)} calls/s sequential, ${x.par.toFixed(0)} with ${o.conc} in flight, median ${x.median.toFixed(3)} ms, p99 ${x.p99.toFixed(3)} ms, server CPU ${x.cpu.toFixed(1)} µs/call`);
  }
const med = (n, k) => median(got[n].map((x) => x[k]));
for (const n of names)
  console.log(`${n} (median of ${o.rounds}): ${med(n, "seq").toFixed(0)} calls/s sequential, ${med(n, "par").toFixed(0)} in flight, median ${med(n, "median").toFixed(3)} ms, p99 ${med(n, "p99").toFixed(3)} ms, server CPU ${med(n, "cpu").toFixed(1)} µs/call`);
for (const n of names.filter((n) => n !== "official" && got.official)) {
  const ratios = got[n].map((x, i) => x.seq / got.official[i].seq);
  console.log(`${n} / official calls/s, sequential: per round ${ratios.map((x) => x.toFixed(2)).join(", ")}; median ${median(ratios).toFixed(2)}x;` +
              ` in flight: median ${median(got[n].map((x, i) => x.par / got.official[i].par)).toFixed(2)}x`);
}
