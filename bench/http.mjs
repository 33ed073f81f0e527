// bench/http.mjs: small reads through MCP over stdio (the anchor) and over
// Streamable HTTP (`burrow mcp --http`), same binary, same file, same SDK
// client, same run. Sequential calls give latency (p50, p99) and calls/s;
// 4 clients at once give the HTTP server's throughput with its 2 workers.
// Writes a table between the http-bench markers of docs/benchmarks.md and
// the raw JSON to bench/results/.
//
//   node bench/http.mjs [--n 2000] [--rounds 3] [--out docs/benchmarks.md]
// (`make bench` runs it; BENCH_HTTP=0 skips it there.)

import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { writeSection } from "./section.mjs";

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const SDK = path.join(REPO, "test/e2e/node_modules/@modelcontextprotocol/sdk/dist/esm/client");
const { Client } = await import(path.join(SDK, "index.js"));
const { StdioClientTransport } = await import(path.join(SDK, "stdio.js"));
const { StreamableHTTPClientTransport } = await import(path.join(SDK, "streamableHttp.js"));

const arg = (k, d) => { const i = process.argv.indexOf(`--${k}`); return i > 0 ? process.argv[i + 1] : d; };
const N = Number(arg("n", process.env.BENCH_HTTP_N || 2000));
const ROUNDS = Number(arg("rounds", process.env.BENCH_HTTP_ROUNDS || 3));
const OUT = path.resolve(arg("out", process.env.BENCH_OUT || path.join(REPO, "docs/benchmarks.md")));
const BIN = path.resolve(process.env.BURROW_BIN || path.join(REPO, "build/burrow"));
const CONC = 4;

const ws = fs.mkdtempSync(path.join(os.tmpdir(), "burrow-httpbench-"));
fs.writeFileSync(path.join(ws, "small.txt"), "a small file\n".repeat(20));

function startHttp() {
  const proc = spawn(BIN, ["mcp", "--root", ws, "--http", "127.0.0.1:0"], { stdio: ["ignore", "ignore", "pipe"] });
  let err = "";
  return new Promise((resolve, reject) => {
    proc.on("exit", (c) => reject(new Error(`burrow exited ${c}: ${err}`)));
    proc.stderr.on("data", (d) => {
      err += d;
      const m = err.match(/at (http:\/\/\S+\/mcp)/);
      if (m) resolve({ url: m[1], stop: () => { proc.removeAllListeners("exit"); proc.kill("SIGTERM"); } });
    });
  });
}

async function client(kind, url) {
  const c = new Client({ name: "bench", version: "1" });
  const t = kind === "stdio"
    ? new StdioClientTransport({ command: BIN, args: ["mcp", "--root", ws], stderr: "ignore" })
    : new StreamableHTTPClientTransport(new URL(url));
  await c.connect(t);
  return c;
}

async function reads(c, n) {
  const lat = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    const r = await c.callTool({ name: "read_file", arguments: { path: "small.txt" } });
    lat.push(performance.now() - t0);
    if (r.isError) throw new Error(JSON.stringify(r));
  }
  return lat;
}

const pct = (xs, p) => { const s = [...xs].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor(p * s.length))]; };
const median = (xs) => pct(xs, 0.5);

async function one(kind) {
  let server, url;
  if (kind !== "stdio") ({ url, stop: server } = await startHttp());
  try {
    if (kind === "ping" || kind === "json") { // plain fetch, JSON answers: ping (C only), read_file (the worker)
      const c = await client("http", url);
      const sid = c.transport.sessionId;
      const one = async (i) => {
        const t0 = performance.now();
        const r = await fetch(url, { method: "POST", headers: { "content-type": "application/json", accept: "application/json",
          "mcp-session-id": sid }, body: JSON.stringify(kind === "ping" ? { jsonrpc: "2.0", id: i, method: "ping" }
          : { jsonrpc: "2.0", id: i, method: "tools/call", params: { name: "read_file", arguments: { path: "small.txt" } } }) });
        await r.text();
        return performance.now() - t0;
      };
      for (let i = 0; i < 50; i++) await one(i);
      const lat = [];
      const t0 = performance.now();
      for (let i = 0; i < N; i++) lat.push(await one(i));
      const secs = (performance.now() - t0) / 1000;
      await c.close();
      return { calls: N, per_s: N / secs, p50: pct(lat, 0.5), p99: pct(lat, 0.99) };
    }
    if (kind === "http-4") {
      const cs = await Promise.all(Array.from({ length: CONC }, () => client("http", url)));
      await Promise.all(cs.map((c) => reads(c, 50))); // warm-up
      const t0 = performance.now();
      const lats = await Promise.all(cs.map((c) => reads(c, Math.ceil(N / CONC))));
      const secs = (performance.now() - t0) / 1000;
      for (const c of cs) await c.close();
      const all = lats.flat();
      return { calls: all.length, per_s: all.length / secs, p50: pct(all, 0.5), p99: pct(all, 0.99) };
    }
    const c = await client(kind, url);
    await reads(c, 50);
    const t0 = performance.now();
    const lat = await reads(c, N);
    const secs = (performance.now() - t0) / 1000;
    await c.close();
    return { calls: N, per_s: N / secs, p50: pct(lat, 0.5), p99: pct(lat, 0.99) };
  } finally {
    if (server) server();
  }
}

const runs = { stdio: [], http: [], "http-4": [], json: [], ping: [] };
for (let r = 0; r < ROUNDS; r++) {
  for (const kind of Object.keys(runs)) {
    const res = await one(kind);
    runs[kind].push(res);
    console.log(`round ${r + 1} ${kind}: ${res.per_s.toFixed(0)} calls/s, p50 ${res.p50.toFixed(2)} ms, p99 ${res.p99.toFixed(2)} ms`);
  }
}
fs.rmSync(ws, { recursive: true, force: true });

const med = (kind, k) => median(runs[kind].map((x) => x[k]));
const anchor = med("stdio", "per_s");
const row = (kind, label) => `| ${label} | ${med(kind, "per_s").toFixed(0)} | ${(med(kind, "per_s") / anchor).toFixed(2)} | ${med(kind, "p50").toFixed(2)} | ${med(kind, "p99").toFixed(2)} |`;
const stamp = new Date().toISOString().replace(/[:.]/g, "-");
const resultsDir = path.join(REPO, "bench/results");
fs.mkdirSync(resultsDir, { recursive: true });
fs.writeFileSync(path.join(resultsDir, `http-${stamp}.json`), JSON.stringify({ n: N, rounds: ROUNDS, runs }, null, 2));

const table = `Small reads (\`read_file\` of a 260-byte file) through the official SDK client, ${N} calls per run after 50 to warm up,
median of ${ROUNDS} rounds (stdio, HTTP, HTTP x ${CONC} alternating), ${new Date().toISOString().slice(0, 10)},
\`node bench/http.mjs\`. Ratio: calls/s against stdio in the same run.

| transport | calls/s | vs stdio | p50 ms | p99 ms |
|---|---:|---:|---:|---:|
${row("stdio", "stdio, 1 client (anchor)")}
${row("http", "Streamable HTTP, 1 client (SSE answers)")}
${row("http-4", `Streamable HTTP, ${CONC} clients at once (2 workers)`)}
${row("json", "\`read_file\` by plain fetch, JSON answer (no SSE)")}
${row("ping", "HTTP floor: \`ping\` by plain fetch, answered by the C side (no Lua)")}

The floor row is one HTTP round trip of Node's fetch with no Lua behind it;
the plain-fetch read adds the hand-off to the session's worker thread and
back; the SDK rows add the SSE answer (a priming event, then the message)
and the SDK's stream parsing.
With 2 cores shared by other jobs, 4 clients at once mostly measure the
scheduler; load average at the start: ${os.loadavg().map((x) => x.toFixed(2)).join(" ")}.`;
console.log(writeSection(OUT, "http-bench", table, "## MCP over HTTP vs stdio (`bench/http.mjs`)"));
