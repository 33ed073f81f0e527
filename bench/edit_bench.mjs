#!/usr/bin/env node
// bench/edit_bench.mjs: edit_file through MCP, burrow against the official
// filesystem server, same machine, same run: one edit in the middle of a
// 50 MiB file (median of --runs calls, alternating two replacements so the
// file stays the same size), and 1,000 small edits (200 files x 5 unique
// tokens) in one session. A raw JSON-RPC client (one line per message), so
// the numbers are the servers'. Every edit is checked on disk afterwards.
// The servers alternate for --rounds rounds; the table takes the median of
// each measure over the rounds.
//
// usage: node bench/edit_bench.mjs --ws DIR --official PATH/dist/index.js
//          --burrow BIN [--runs 5] [--n 1000] [--rounds 3] [--timeout 300] [--json FILE]
//          [--out docs/benchmarks.md] [--servers "official burrow"]
// Writes the table between the edit-bench markers of --out.

import { spawn, execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { writeSection } from "./section.mjs";

const args = process.argv.slice(2);
const o = { ws: null, official: null, burrow: null, runs: 5, n: 1000, rounds: 3, timeout: 300, json: null, out: null, servers: "official burrow" };
for (let i = 0; i < args.length; i++) {
  const k = args[i].replace(/^--/, ""), v = args[++i];
  if (!(k in o)) { console.error(`edit_bench: unknown option --${k}`); process.exit(2); }
  o[k] = typeof o[k] === "number" ? Number(v) : v;
}
if (!o.ws || !o.out) { console.error("usage: node bench/edit_bench.mjs --ws DIR --out FILE --official JS --burrow BIN"); process.exit(2); }

const REPO = path.resolve(path.dirname(new URL(import.meta.url).pathname), "..");
const BIG_LINES = 524288; // 100-byte lines: 50 MiB
const NEEDLE = ["NEEDLE_BIG_ALPHA", "NEEDLE_BIG_OMEGA"];
const FILES = 200, TOKENS = 5;

// ---- workspace ----

function makeWorkspace(dir) {
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(path.join(dir, "small"), { recursive: true });
  const line = (i) => `line ${String(i).padStart(7, "0")} ` + "x".repeat(86) + "\n"; // 100 bytes
  const fd = fs.openSync(path.join(dir, "big.txt"), "w");
  const chunk = [];
  for (let i = 0; i < BIG_LINES; i++) {
    chunk.push(i === BIG_LINES / 2 ? (NEEDLE[0] + " ").padEnd(99, "y") + "\n" : line(i));
    if (chunk.length === 8192) { fs.writeSync(fd, chunk.join("")); chunk.length = 0; }
  }
  if (chunk.length) fs.writeSync(fd, chunk.join(""));
  fs.closeSync(fd);
  for (let f = 0; f < FILES; f++) {
    const lines = [];
    for (let l = 0; l < 40; l++) {
      const t = l % 8 === 3 ? ` token_${f}_${l >> 3}_a` : "";
      lines.push(`\tconst value${l} = compute(${l}, "${f}");${t}`);
    }
    fs.writeFileSync(path.join(dir, "small", `f${String(f).padStart(3, "0")}.js`), lines.join("\n") + "\n");
  }
}

// ---- a raw JSON-RPC client over stdio ----

class Client {
  constructor(cmd) {
    this.proc = spawn(cmd[0], cmd.slice(1), { stdio: ["pipe", "pipe", "pipe"] });
    this.pending = new Map();
    this.next = 1;
    this.buf = [];
    this.stderr = "";
    this.proc.stderr.on("data", (d) => { this.stderr = (this.stderr + d).slice(-4000); });
    this.proc.stdout.on("data", (d) => this.onData(d));
    this.exited = new Promise((res) => this.proc.on("exit", () => {
      for (const p of this.pending.values()) p.reject(new Error("server exited: " + this.stderr.slice(-500)));
      res();
    }));
  }
  onData(chunk) {
    let start = 0;
    for (;;) {
      const nl = chunk.indexOf(10, start);
      if (nl < 0) { if (start < chunk.length) this.buf.push(chunk.subarray(start)); return; }
      const line = Buffer.concat([...this.buf, chunk.subarray(start, nl)]);
      this.buf = [];
      start = nl + 1;
      let msg;
      try { msg = JSON.parse(line.toString("utf8")); } catch { continue; }
      const p = this.pending.get(msg.id);
      if (p && (msg.result !== undefined || msg.error !== undefined)) {
        this.pending.delete(msg.id);
        p.resolve({ msg, bytes: line.length, ms: performance.now() - p.t });
      } else if (msg.method && msg.id !== undefined) {
        this.send({ jsonrpc: "2.0", id: msg.id, result: msg.method === "roots/list" ? { roots: [] } : {} });
      }
    }
  }
  send(m) { this.proc.stdin.write(JSON.stringify(m) + "\n"); }
  request(method, params, timeoutMs) {
    const id = this.next++;
    return new Promise((resolve, reject) => {
      const timer = timeoutMs ? setTimeout(() => { this.pending.delete(id); reject(new Error("timeout")); }, timeoutMs) : null;
      this.pending.set(id, {
        resolve: (r) => { if (timer) clearTimeout(timer); resolve(r); },
        reject: (e) => { if (timer) clearTimeout(timer); reject(e); },
        t: performance.now(),
      });
      this.send({ jsonrpc: "2.0", id, method, params });
    });
  }
  async init() {
    const r = await this.request("initialize", { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "edit-bench", version: "1" } });
    this.send({ jsonrpc: "2.0", method: "notifications/initialized" });
    return r.msg.result;
  }
  peakRssKb() {
    try { return Number(/VmHWM:\s+(\d+)/.exec(fs.readFileSync(`/proc/${this.proc.pid}/status`, "utf8"))[1]); } catch { return null; }
  }
  async close() {
    this.proc.stdin.end();
    const t = setTimeout(() => this.proc.kill("SIGKILL"), 3000);
    await this.exited;
    clearTimeout(t);
  }
}

const SERVERS = {
  official: (ws) => ({ cmd: ["node", o.official, ws], edit: (p, a, b) => ({ path: p, edits: [{ oldText: a, newText: b }] }) }),
  burrow: (ws) => ({ cmd: [o.burrow, "mcp", "--root", ws, "--cap", "max_file_size=64MiB"],
    edit: (p, a, b) => ({ path: p, old_text: a, new_text: b }) }),
};

const median = (a) => { const s = [...a].sort((x, y) => x - y); return s.length ? (s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2) : null; };
const pct = (a, p) => { const s = [...a].sort((x, y) => x - y); return s.length ? s[Math.min(s.length - 1, Math.floor(p * s.length))] : null; };

async function callEdit(c, srv, p, a, b) {
  const r = await c.request("tools/call", { name: "edit_file", arguments: srv.edit(p, a, b) }, o.timeout * 1000);
  const err = r.msg.error || r.msg.result?.isError;
  if (err) throw new Error(`edit_file ${p} failed: ` + JSON.stringify(r.msg.error ?? r.msg.result.content).slice(0, 300));
  return r;
}

async function bench(name) {
  const ws = path.join(o.ws, name);
  makeWorkspace(ws);
  const srv = SERVERS[name](ws);
  const c = new Client(srv.cmd);
  const harness = path.resolve(o.official, "../../../../..");
  const shown = (x) => x.replace(ws, "$WS").replace(harness, "$HARNESS").replace(REPO + "/", "");
  const res = { server: name, command: srv.cmd.map(shown).join(" ") };
  try {
    const info = await c.init();
    res.serverInfo = info?.serverInfo;
    // one edit in the middle of 50 MiB, alternating so the size stays put
    const big = path.join(ws, "big.txt"), times = [];
    for (let i = 0; i < o.runs; i++) {
      const [a, b] = i % 2 ? [NEEDLE[1], NEEDLE[0]] : [NEEDLE[0], NEEDLE[1]];
      try {
        const r = await callEdit(c, srv, big, a, b);
        times.push(r.ms);
        res.big_response_bytes = r.bytes;
      } catch (e) { res.big_error = String(e.message).slice(0, 300); break; }
    }
    res.big_ms = times;
    res.big_median_ms = median(times);
    if (!res.big_error) {
      const want = o.runs % 2 ? NEEDLE[1] : NEEDLE[0];
      const head = fs.readFileSync(big, "latin1").slice((BIG_LINES / 2) * 100, (BIG_LINES / 2) * 100 + 16);
      if (head !== want) res.big_error = `the file does not hold the last edit (${head})`;
    }
    // 1,000 small edits in one session
    const lat = [], t0 = performance.now();
    let done = 0;
    for (let f = 0; f < FILES && done < o.n; f++) {
      for (let t = 0; t < TOKENS && done < o.n; t++, done++) {
        const p = path.join(ws, "small", `f${String(f).padStart(3, "0")}.js`);
        const r = await callEdit(c, srv, p, `token_${f}_${t}_a`, `token_${f}_${t}_b`);
        lat.push(r.ms);
      }
    }
    res.small_total_ms = performance.now() - t0;
    res.small_calls = lat.length;
    res.small_median_ms = median(lat);
    res.small_p99_ms = pct(lat, 0.99);
    res.small_calls_per_s = lat.length / (res.small_total_ms / 1000);
    const sample = fs.readFileSync(path.join(ws, "small", "f199.js"), "utf8");
    if (o.n >= FILES * TOKENS && !sample.includes("token_199_4_b")) res.small_error = "the last edit is not on disk";
    res.peak_rss_kb = c.peakRssKb();
  } catch (e) {
    res.error = String(e.message).slice(0, 500);
  } finally {
    await c.close();
    fs.rmSync(ws, { recursive: true, force: true });
  }
  return res;
}

// ---- report ----

const fmt = (x, d = 1) => (x == null || !Number.isFinite(x) ? "n/a" : x >= 1000 ? Math.round(x).toLocaleString("en-US") : x.toFixed(x >= 100 ? 0 : x >= 10 ? 1 : d + 1));

// One result per server: each measure the median over its rounds.
function merge(runs) {
  const out = { ...runs[runs.length - 1] };
  for (const k of Object.keys(out)) {
    const vals = runs.map((r) => r[k]).filter((v) => typeof v === "number");
    if (vals.length === runs.length) out[k] = median(vals);
  }
  for (const k of ["error", "big_error", "small_error"]) out[k] = runs.map((r) => r[k]).find(Boolean);
  return out;
}

function report(all) {
  const names = [...new Set(all.map((r) => r.server))];
  const results = names.map((n) => merge(all.filter((r) => r.server === n)));
  const by = Object.fromEntries(results.map((r) => [r.server, r]));
  const rows = [
    ["edit_file, one line in a 50 MiB file (median)", "ms", (r) => r.big_error ? null : r.big_median_ms, "lower"],
    ["edit_file, its response on the wire", "KiB", (r) => r.big_error ? null : r.big_response_bytes / 1024, "lower"],
    ["1,000 small edits, one session, total", "s", (r) => r.small_total_ms / 1000, "lower"],
    ["small edit, median latency", "ms", (r) => r.small_median_ms, "lower"],
    ["small edit, p99 latency", "ms", (r) => r.small_p99_ms, "lower"],
    ["small edits per second", "calls/s", (r) => r.small_calls_per_s, "higher"],
    ["server peak RSS", "MiB", (r) => r.peak_rss_kb / 1024, "lower"],
  ];
  const cpu = os.cpus()[0]?.model ?? "?";
  let commit = "unknown";
  try {
    commit = execFileSync("git", ["-C", REPO, "rev-parse", "--short", "HEAD"]).toString().trim();
    if (execFileSync("git", ["-C", REPO, "status", "--porcelain", "--untracked-files=no"]).toString().trim())
      commit += " (with uncommitted changes)";
  } catch {}
  const lines = [
    "## edit_file: burrow vs the official server",
    "",
    `Generated by \`bench/edit.sh\` (\`make bench\` runs it) on ${new Date().toISOString().replace(/\.\d+Z$/, "Z")}, burrow at commit \`${commit}\`: ` +
      `${os.cpus().length} CPUs (${cpu}), Linux ${os.release()}, node ${process.version}. ` +
      `Both servers run back to back on fresh copies of the same workspace, alternating for ${o.rounds} rounds; ` +
      "medians over the rounds. Compare the ratios: absolute times move with the load of the shared machine.",
    "",
    "| measurement | unit | official | burrow | burrow / official |",
    "|---|---|---:|---:|---:|",
  ];
  for (const [label, get, unit] of rows.map((r) => [r[0], r[2], r[1]])) {
    const a = by.official && !by.official.error ? get(by.official) : null;
    const b = by.burrow && !by.burrow.error ? get(by.burrow) : null;
    const ratio = a && b ? `${(b / a).toFixed(b / a >= 10 ? 0 : 2)}×` : "n/a";
    lines.push(`| ${label} | ${unit} | ${fmt(a)} | ${fmt(b)} | ${ratio} |`);
  }
  lines.push("");
  for (const r of results) {
    const errs = [r.error, r.big_error, r.small_error].filter(Boolean);
    if (errs.length) lines.push(`- ${r.server}: ${errs.join("; ")}`);
  }
  lines.push(
    "- The 50 MiB file has 524,288 lines of 100 bytes; each call replaces the one line that holds a 16-byte",
    `  token (alternating two tokens, ${o.runs} calls). Small edits: 200 files of 40 tab-indented lines, 5 unique tokens`,
    "  each, replaced one call at a time (1,000 calls, sequential). Every result is checked on disk.",
    "- burrow's edit is an atomic, fsynced replace (temp file, rename, directory fsync) with a compare-and-set on the",
    "  hash it read, and returns a unified diff built from the edited span; the official server (2026.8.31) diffs",
    "  the whole old and new text to build its answer.",
    "",
    "Commands:",
    "",
    "```sh",
    ...results.map((r) => `# ${r.server}: ${r.command}`),
    "node bench/edit_bench.mjs --ws $TMP --runs " + o.runs + " --n " + o.n + " --rounds " + o.rounds + " --official $HARNESS/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js --burrow build/burrow --out docs/benchmarks.md",
    "```",
  );
  return lines.join("\n");
}

const results = [];
for (let round = 1; round <= o.rounds; round++) {
  for (const name of o.servers.split(/\s+/).filter(Boolean)) {
    if (!SERVERS[name]) { console.error(`edit_bench: unknown server ${name}`); process.exit(2); }
    process.stderr.write(`+ ${name}, round ${round}/${o.rounds}: edit_file bench\n`);
    const r = await bench(name);
    process.stderr.write(`  ${JSON.stringify({ ...r, big_ms: undefined })}\n`);
    results.push({ ...r, round });
  }
}
if (o.json) fs.writeFileSync(o.json, JSON.stringify(results, null, 2));
writeSection(o.out, "edit-bench", report(results));
process.exit(results.some((r) => r.error) ? 1 : 0);
