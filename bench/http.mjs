// bench/http.mjs: MCP over Streamable HTTP (`burrow mcp --http`), side by
// side in one run with its anchors: stdio (the same binary), the HTTP floor
// (a `ping` answered by the C side, no Lua), and the official filesystem
// server behind supergateway (the stdio -> Streamable HTTP bridge its
// users run; `bench/peers`, npm). Rows:
//   - small reads (`read_file` of a 260-byte file), one SDK client per
//     transport: calls/s, p50, p99;
//   - 8 SDK clients (8 sessions) at once on 4 workers;
//   - the same two rows with the official v2 client (@modelcontextprotocol/client,
//     test/e2e's lockfile) speaking MCP 2026-07-28: no session, each call a
//     stateless request; and read_file by plain fetch (JSON answers), in a
//     session and stateless, the server's side of that comparison without
//     either SDK;
//   - the SDK's own floor: `ping` through the SDK client, answered by
//     the C side (no Lua), as the fetch floor is for plain fetch;
//   - CPU a call on each side (the client process's, the server
//     process's from /proc), so a row shows where its time goes;
//   - tenants: tenant A runs greps over a 20,000-file tree with 2 clients
//     for --grep-secs while tenant B's 4 readers read a small file; B's p99
//     (4 workers, 2 per tenant: http.max_running).
// Medians of --rounds rounds; ratios against the anchors of the same run.
// Writes a table between the http-bench markers of docs/benchmarks.md and
// the raw JSON to bench/results/.
//
//   node bench/http.mjs [--n 2000] [--rounds 3] [--grep-secs 30] [--out docs/benchmarks.md]
// (`make bench` runs it; BENCH_HTTP=0 skips it there.)

import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { spawn, spawnSync } from "node:child_process";
import { setMaxListeners } from "node:events";
import { fileURLToPath } from "node:url";
import { writeSection } from "./section.mjs";

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const SDK = path.join(REPO, "test/e2e/node_modules/@modelcontextprotocol/sdk/dist/esm/client");
const { Client } = await import(path.join(SDK, "index.js"));
const { StdioClientTransport } = await import(path.join(SDK, "stdio.js"));
const { StreamableHTTPClientTransport } = await import(path.join(SDK, "streamableHttp.js"));
const V2 = await import(path.join(REPO, "test/e2e/node_modules/@modelcontextprotocol/client/dist/index.mjs"));

// the SDK client adds an abort listener per ping to one signal (2,000
// pings: Node's leak warning, once a ping past 1,500): not the server's
setMaxListeners(0);

const arg = (k, d) => { const i = process.argv.indexOf(`--${k}`); return i > 0 ? process.argv[i + 1] : d; };
const N = Number(arg("n", process.env.BENCH_HTTP_N || 2000));
const ROUNDS = Number(arg("rounds", process.env.BENCH_HTTP_ROUNDS || 3));
const GREP_SECS = Number(arg("grep-secs", process.env.BENCH_HTTP_GREP_SECS || 30));
const OUT = path.resolve(arg("out", process.env.BENCH_OUT || path.join(REPO, "docs/benchmarks.md")));
const BIN = path.resolve(process.env.BURROW_BIN || path.join(REPO, "build/burrow"));
const BASE = arg("base", process.env.BURROW_BASE || ""); // an older build: its tenant row too ("before")
const MANY = 8;        // sessions at once
const WORKERS = 4;     // the listener's workers for the many-session and tenant rows
const PER_TENANT = 2;  // http.max_running in the tenant row

const ws = fs.mkdtempSync(path.join(os.tmpdir(), "burrow-httpbench-"));
fs.mkdirSync(path.join(ws, "a"));
fs.mkdirSync(path.join(ws, "b"));
fs.writeFileSync(path.join(ws, "a/small.txt"), "a small file\n".repeat(20));
fs.writeFileSync(path.join(ws, "b/small.txt"), "a small file\n".repeat(20));
// tenant A's tree: 20,000 files of ~2 KiB in 200 directories
for (let d = 0; d < 200; d++) {
  const dir = path.join(ws, "a/tree", `d${d}`);
  fs.mkdirSync(dir, { recursive: true });
  for (let f = 0; f < 100; f++) {
    fs.writeFileSync(path.join(dir, `f${f}.txt`), `line ${d} ${f} alpha beta gamma\n`.repeat(64));
  }
}
fs.writeFileSync(path.join(ws, "b.yaml"), "roots: [b]\n");
const sha = (s) => spawnSync(BIN, ["token", "hash", s], { encoding: "utf8" }).stdout.trim();
fs.writeFileSync(path.join(ws, "tenants.yaml"), [
  "roots: [a]",
  "http:",
  `  workers: ${WORKERS}`,
  `  max_running: ${PER_TENANT}`,
  "  tenants:",
  "    b: {config: b.yaml}",
  "  tokens:",
  `    - {sha256: ${sha("tok-a")}}`,
  `    - {sha256: ${sha("tok-b")}, tenant: b}`,
  "",
].join("\n"));

function startServer(cmd, args, match) {
  const proc = spawn(cmd, args, { stdio: ["ignore", "pipe", "pipe"] });
  let err = "";
  return new Promise((resolve, reject) => {
    const onExit = (c) => reject(new Error(`${cmd} exited ${c}: ${err}`));
    proc.on("exit", onExit);
    const on = (d) => {
      err += d;
      const m = err.match(match);
      if (m) {
        proc.off("exit", onExit);
        resolve({ url: m[1], pid: proc.pid, stop: () => { proc.kill("SIGTERM"); } });
      }
    };
    proc.stderr.on("data", on);
    proc.stdout.on("data", on);
  });
}

const startBurrow = (extra = [], bin = BIN) => startServer(bin, ["mcp", "--root", path.join(ws, "a"), ...extra, "--http", "127.0.0.1:0"],
  /at (http:\/\/\S+\/mcp)/);

// The official filesystem server behind supergateway, stateful (one server
// process per session, as its users run it); bench/peers installs both.
const PEERS = path.join(REPO, "bench/peers");
function peers() {
  const gw = path.join(PEERS, "node_modules/supergateway/dist/index.js");
  if (!fs.existsSync(gw)) {
    const r = spawnSync("npm", ["ci", "--no-audit", "--no-fund"], { cwd: PEERS, stdio: "inherit" });
    if (r.status !== 0) return null;
  }
  return fs.existsSync(gw) ? gw : null;
}
async function startOfficial(gw) {
  const port = 20000 + Math.floor(Math.random() * 20000);
  const fsServer = path.join(PEERS, "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");
  const s = await startServer(process.execPath, [gw, "--stdio", `${process.execPath} ${fsServer} ${path.join(ws, "a")}`,
    "--outputTransport", "streamableHttp", "--stateful", "--port", String(port), "--logLevel", "info"],
  /(?:Listening on port|listening on port) (\d+)/i);
  return { url: `http://127.0.0.1:${port}/mcp`, stop: s.stop };
}

async function client(kind, url, token) {
  if (kind === "v2") { // MCP 2026-07-28: stateless requests
    const c = new V2.Client({ name: "bench-v2", version: "1" }, { versionNegotiation: { mode: { pin: "2026-07-28" } } });
    await c.connect(new V2.StreamableHTTPClientTransport(new URL(url)));
    return c;
  }
  const c = new Client({ name: "bench", version: "1" });
  const headers = token ? { authorization: `Bearer ${token}` } : {};
  const t = kind === "stdio"
    ? new StdioClientTransport({ command: BIN, args: ["mcp", "--root", path.join(ws, "a")], stderr: "ignore" })
    : new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
  await c.connect(t);
  return c;
}

async function reads(c, n, tool = "read_file", file = "small.txt") {
  const lat = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    const r = await c.callTool({ name: tool, arguments: { path: file } });
    lat.push(performance.now() - t0);
    if (r.isError) throw new Error(JSON.stringify(r));
  }
  return lat;
}

// CPU time of a process (ms, user + system, all its threads), from /proc
const TICK_MS = 1000 / (Number(spawnSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).stdout) || 100);
const procCpu = (pid) => {
  try {
    const f = fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
    return (Number(f[11]) + Number(f[12])) * TICK_MS;
  } catch { return NaN; }
};
// CPU a call (microseconds) of this process (the client) and of the server pid
function cpuMeter(pid) {
  const c0 = process.cpuUsage(), s0 = pid ? procCpu(pid) : NaN;
  return (calls) => {
    const c = process.cpuUsage(c0);
    return { client_us: (c.user + c.system) / calls, server_us: pid ? (procCpu(pid) - s0) * 1000 / calls : NaN };
  };
}

const pct = (xs, p) => { const s = [...xs].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor(p * s.length))]; };
const median = (xs) => pct(xs, 0.5);
const stats = (lat, secs) => ({ calls: lat.length, per_s: lat.length / secs, p50: pct(lat, 0.5), p99: pct(lat, 0.99) });

async function timed(cs, n, tool, file, pid) {
  await Promise.all(cs.map((c) => reads(c, 50, tool, file))); // warm-up
  const cpu = cpuMeter(pid);
  const t0 = performance.now();
  const lats = await Promise.all(cs.map((c) => reads(c, Math.ceil(n / cs.length), tool, file)));
  const res = stats(lats.flat(), (performance.now() - t0) / 1000);
  return { ...res, ...cpu(res.calls) };
}

// The SDK's floor: its ping, which burrow's C side answers (no Lua)
async function sdkPings(c, n, pid) {
  for (let i = 0; i < 50; i++) await c.ping();
  const cpu = cpuMeter(pid), lat = [];
  const t0 = performance.now();
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await c.ping();
    lat.push(performance.now() - t);
  }
  const res = stats(lat, (performance.now() - t0) / 1000);
  return { ...res, ...cpu(res.calls) };
}

async function one(kind, gw) {
  let server;
  if (kind === "official") {
    if (!gw) return null;
    server = await startOfficial(gw);
  } else if (kind === "many" || kind === "v2many") server = await startBurrow(["--config", path.join(ws, "many.yaml")]);
  else if (kind !== "stdio") server = await startBurrow();
  const url = server?.url;
  try {
    if (kind === "raw" || kind === "rawstateless") { // plain fetch, JSON answers: read_file, a session's or stateless
      const c = kind === "raw" ? await client("http", url) : null;
      const meta = { "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {} };
      const headers = c
        ? { "content-type": "application/json", accept: "application/json", "mcp-session-id": c.transport.sessionId, "mcp-protocol-version": "2025-11-25" }
        : { "content-type": "application/json", accept: "application/json", "mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call", "mcp-name": "read_file" };
      const call = async (i) => {
        const t0 = performance.now();
        const r = await fetch(url, { method: "POST", headers, body: JSON.stringify({ jsonrpc: "2.0", id: i, method: "tools/call",
          params: { name: "read_file", arguments: { path: "small.txt" }, ...(c ? {} : { _meta: meta }) } }) });
        const t = await r.text();
        if (!t.includes("a small file")) throw new Error(t);
        return performance.now() - t0;
      };
      for (let i = 0; i < 50; i++) await call(i);
      const lat = [];
      const cpu = cpuMeter(server.pid);
      const t0 = performance.now();
      for (let i = 0; i < N; i++) lat.push(await call(i));
      const res = stats(lat, (performance.now() - t0) / 1000);
      if (c) await c.close();
      return { ...res, ...cpu(res.calls) };
    }
    if (kind === "ping") { // plain fetch, JSON answers: ping (C only)
      const c = await client("http", url);
      const sid = c.transport.sessionId;
      const call = async (i) => {
        const t0 = performance.now();
        const r = await fetch(url, { method: "POST", headers: { "content-type": "application/json", accept: "application/json",
          "mcp-session-id": sid, "mcp-protocol-version": "2025-11-25" }, body: JSON.stringify({ jsonrpc: "2.0", id: i, method: "ping" }) });
        await r.text();
        return performance.now() - t0;
      };
      for (let i = 0; i < 50; i++) await call(i);
      const lat = [];
      const cpu = cpuMeter(server.pid);
      const t0 = performance.now();
      for (let i = 0; i < N; i++) lat.push(await call(i));
      const res = stats(lat, (performance.now() - t0) / 1000);
      await c.close();
      return { ...res, ...cpu(res.calls) };
    }
    if (kind === "sdkping") {
      const c = await client("http", url);
      const res = await sdkPings(c, N, server.pid);
      await c.close();
      return res;
    }
    const n = kind === "many" || kind === "v2many" ? MANY : 1;
    const cs = await Promise.all(Array.from({ length: n }, () =>
      client(kind === "stdio" ? "stdio" : kind.startsWith("v2") ? "v2" : "http", url)));
    // the official row's server is supergateway and the processes it starts: not measured
    const res = kind === "official"
      ? await timed(cs, N, "read_text_file", path.join(ws, "a/small.txt"))
      : await timed(cs, N * (n > 1 ? 2 : 1), undefined, undefined, server?.pid);
    for (const c of cs) await c.close();
    return res;
  } finally {
    if (server) server.stop();
  }
}

// Tenant A greps its tree with 2 clients for GREP_SECS; tenant B's 4
// readers read meanwhile. B's latencies, and how many greps A ran.
async function tenants(bin = BIN, config = "tenants.yaml") {
  const server = await startBurrow(["--config", path.join(ws, config)], bin);
  try {
    const greppers = await Promise.all([1, 2].map(() => client("http", server.url, "tok-a")));
    const readers = await Promise.all([1, 2, 3, 4].map(() => client("http", server.url, "tok-b")));
    await Promise.all(readers.map((c) => reads(c, 20)));
    const end = performance.now() + GREP_SECS * 1000;
    let greps = 0, grepMs = [];
    const grepLoop = async (c) => {
      while (performance.now() < end) {
        const t0 = performance.now();
        const r = await c.callTool({ name: "grep", arguments: { pattern: "gam+a\\s+\\d{3}", path: "tree", max_results: 5 } });
        grepMs.push(performance.now() - t0);
        if (r.isError) throw new Error(JSON.stringify(r));
        greps++;
      }
    };
    const lat = [];
    const readLoop = async (c) => {
      while (performance.now() < end) lat.push(...await reads(c, 1));
    };
    const t0 = performance.now();
    await Promise.all([...greppers.map(grepLoop), ...readers.map(readLoop)]);
    const secs = (performance.now() - t0) / 1000;
    for (const c of [...greppers, ...readers]) await c.close();
    return { ...stats(lat, secs), greps, grep_p50: pct(grepMs, 0.5) };
  } finally {
    server.stop();
  }
}

fs.writeFileSync(path.join(ws, "many.yaml"), `roots: [a]\nhttp: {workers: ${WORKERS}}\n`);
const gw = peers();
// the base build knows no http.max_running: the same tenants without it
fs.writeFileSync(path.join(ws, "tenants-base.yaml"),
  fs.readFileSync(path.join(ws, "tenants.yaml"), "utf8").replace(/^  max_running: .*\n/m, ""));
const runs = { stdio: [], http: [], many: [], v2: [], v2many: [], raw: [], rawstateless: [], ping: [], sdkping: [], official: [], tenants: [], ...(BASE ? { "tenants-base": [] } : {}) };
for (let r = 0; r < ROUNDS; r++) {
  for (const kind of Object.keys(runs)) {
    const res = kind === "tenants" ? await tenants()
      : kind === "tenants-base" ? await tenants(path.resolve(BASE), "tenants-base.yaml") : await one(kind, gw);
    if (!res) continue;
    runs[kind].push(res);
    console.log(`round ${r + 1} ${kind}: ${res.per_s.toFixed(0)} calls/s, p50 ${res.p50.toFixed(2)} ms, p99 ${res.p99.toFixed(2)} ms` +
      (res.greps !== undefined ? `, ${res.greps} greps (p50 ${res.grep_p50.toFixed(0)} ms)` : "") +
      (res.client_us !== undefined ? `, CPU a call: client ${res.client_us.toFixed(0)} µs, server ${Number.isNaN(res.server_us) ? "n/a" : res.server_us.toFixed(0) + " µs"}` : ""));
  }
}
fs.rmSync(ws, { recursive: true, force: true });

const med = (kind, k) => runs[kind].length ? median(runs[kind].map((x) => x[k])) : NaN;
const f0 = (x) => Number.isNaN(x) ? "n/a" : x.toFixed(0), f2 = (x) => Number.isNaN(x) ? "n/a" : x.toFixed(2);
const http1 = med("http", "per_s");
const row = (kind, label) => `| ${label} | ${f0(med(kind, "per_s"))} | ${f2(med(kind, "per_s") / http1)} | ${f2(med(kind, "p50"))} | ${f2(med(kind, "p99"))} | ${f0(med(kind, "client_us"))} | ${f0(med(kind, "server_us"))} |`;
const stamp = new Date().toISOString().replace(/[:.]/g, "-");
const resultsDir = path.join(REPO, "bench/results");
fs.mkdirSync(resultsDir, { recursive: true });
fs.writeFileSync(path.join(resultsDir, `http-${stamp}.json`), JSON.stringify({ n: N, rounds: ROUNDS, grep_secs: GREP_SECS, runs }, null, 2));

const table = `Small reads (\`read_file\` of a 260-byte file) through the official SDK client, ${N} calls per run after 50 to warm up
(${2 * N} over ${MANY} sessions), median of ${ROUNDS} rounds (the rows alternating), ${new Date().toISOString().slice(0, 10)},
\`node bench/http.mjs\`. Ratio: calls/s against burrow's one HTTP session in the same run.

| transport | calls/s | vs HTTP, 1 session | p50 ms | p99 ms | client CPU µs/call | server CPU µs/call |
|---|---:|---:|---:|---:|---:|---:|
${row("http", "burrow, Streamable HTTP, 1 SDK session (2 workers)")}
${row("many", `burrow, Streamable HTTP, ${MANY} SDK sessions at once (${WORKERS} workers)`)}
${row("v2", "burrow, MCP 2026-07-28 (stateless), 1 v2 SDK client (2 workers)")}
${row("v2many", `burrow, MCP 2026-07-28 (stateless), ${MANY} v2 SDK clients at once (${WORKERS} workers)`)}
${row("raw", "\`read_file\` by plain fetch, JSON answers, in a session (2025-11-25)")}
${row("rawstateless", "\`read_file\` by plain fetch, JSON answers, stateless (2026-07-28)")}
${row("ping", "HTTP floor: \`ping\` by plain fetch, answered by the C side (no Lua)")}
${row("sdkping", "the SDK's floor: \`ping\` through the SDK client, 1 session, answered by the C side")}
${row("official", "official filesystem server behind supergateway (stateful), 1 SDK session")}
${row("stdio", "burrow over stdio, 1 SDK client")}

- one session against the floor: **${f2(http1 / med("ping", "per_s"))}×**; against the SDK's own floor (its \`ping\`): **${f2(http1 / med("sdkping", "per_s"))}×**; against the official server behind supergateway: **${f2(http1 / med("official", "per_s"))}×**;
  ${MANY} sessions against one: **${f2(med("many", "per_s") / http1)}×**; stateless (2026-07-28) against one session: **${f2(med("v2", "per_s") / http1)}×**
  (${MANY} clients: **${f2(med("v2many", "per_s") / med("many", "per_s"))}×** the ${MANY} sessions); by plain fetch, without either SDK,
  a stateless \`read_file\` against a session's: **${f2(med("rawstateless", "per_s") / med("raw", "per_s"))}×**.
- tenants (${WORKERS} workers, \`http.max_running: ${PER_TENANT}\`): while tenant A's 2 clients run greps over a 20,000-file tree
  for ${GREP_SECS} s (median ${f0(med("tenants", "greps"))} greps a round, p50 ${f0(med("tenants", "grep_p50"))} ms each), tenant B's 4 readers
  made ${f0(med("tenants", "per_s"))} calls/s, p50 ${f2(med("tenants", "p50"))} ms, **p99 ${f2(med("tenants", "p99"))} ms**.${BASE ? `
  The same with the base build (\`--base ${process.env.BURROW_BASE_LABEL || BASE}\`: sessions pinned to a worker, no per-tenant cap):
  B's readers made ${f0(med("tenants-base", "per_s"))} calls/s, p50 ${f2(med("tenants-base", "p50"))} ms, **p99 ${f2(med("tenants-base", "p99"))} ms**
  (A ran ${f0(med("tenants-base", "greps"))} greps).` : ""}

The floor row is one HTTP round trip of Node's fetch with no Lua behind it;
the SDK rows add the hand-off to a worker thread, the SSE answer (a priming
event, then the message) and the SDK's stream parsing. The CPU columns are
this run's own: the client process's (all its sessions) and the server
process's (\`/proc\`, all threads; none for stdio, whose server the SDK
starts, or for the official row, whose server is supergateway and its
children), over the calls made. One SDK session's calls run one after the
other, so its client's CPU a call bounds the rate no server can pass:
1,000,000 / ${f0(med("http", "client_us"))} µs = ${f0(1e6 / med("http", "client_us"))} calls/s here, before any server time. Load average at the
start: ${os.loadavg().map((x) => x.toFixed(2)).join(" ")}; ${os.cpus().length} cores.`;
console.log(writeSection(OUT, "http-bench", table, "## MCP over HTTP vs stdio (`bench/http.mjs`)"));
