#!/usr/bin/env node
// Turns bench.mjs --json results into docs/benchmarks.md: medians per server
// and the ratio burrow / official.
//
// usage: node bench/report.mjs --out FILE --official A.json [--official ...]
//          --burrow B.json [--burrow ...] [--cmd-official TEXT] [--cmd-burrow TEXT]
//          [--failed NAME]...
// Several files per server (rounds) are reduced to the median of each measure.

import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { execFileSync } from "node:child_process";

const args = process.argv.slice(2);
const o = { out: null, official: [], burrow: [], cmd: {}, failed: [] };
for (let i = 0; i < args.length; i++) {
  const k = args[i], v = () => {
    if (i + 1 >= args.length) { console.error(`report: ${k} needs a value`); process.exit(2); }
    return args[++i];
  };
  switch (k) {
    case "--out": o.out = v(); break;
    case "--official": o.official.push(v()); break;
    case "--burrow": o.burrow.push(v()); break;
    case "--cmd-official": o.cmd.official = v(); break;
    case "--cmd-burrow": o.cmd.burrow = v(); break;
    case "--failed": o.failed.push(v()); break;
    default: console.error(`report: unknown option ${k}`); process.exit(2);
  }
}
if (!o.out) { console.error("usage: node bench/report.mjs --out FILE --official A.json --burrow B.json"); process.exit(2); }

const load = (files) => files.map((f) => JSON.parse(fs.readFileSync(f, "utf8")));
const runs = { official: load(o.official), burrow: load(o.burrow) };

const median = (a) => {
  const s = a.filter((x) => typeof x === "number" && Number.isFinite(x)).sort((x, y) => x - y);
  if (!s.length) return null;
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const get = (obj, p) => p.split(".").reduce((x, k) => (x == null ? undefined : x[k]), obj);

// [label, getter, unit, better]; a getter returns a number, or undefined/null when absent
const big = (r) => (r.big_read && !r.big_read.error ? r.big_read : undefined);
const MEASURES = [
  ["start-up: spawn → initialize result", (r) => get(r, "startup_ms.median"), "ms", "lower"],
  ["small read (1 KiB), median latency", (r) => get(r, "small_sequential.median_ms"), "ms", "lower"],
  ["small read, p99 latency", (r) => get(r, "small_sequential.p99_ms"), "ms", "lower"],
  ["small reads, sequential", (r) => get(r, "small_sequential.calls_per_s"), "calls/s", "higher"],
  ["small reads, 16 in flight", (r) => get(r, "small_pipelined.calls_per_s"), "calls/s", "higher"],
  ["50 MiB file, whole read", (r) => big(r)?.median_ms_parsed, "ms", "lower"],
  ["50 MiB file, throughput", (r) => big(r)?.MB_per_s, "MiB/s", "higher"],
  ["50 MiB file, response on the wire", (r) => (big(r)?.response_bytes ?? NaN) / 1048576, "MiB", "lower"],
  ["first 100 lines of the 50 MiB file", (r) => get(r, "big_head100.median_ms"), "ms", "lower"],
  ["last 100 lines of the 50 MiB file", (r) => get(r, "big_tail100.median_ms"), "ms", "lower"],
  ["content search (5k files)", (r) => (r.content_search && !r.content_search.isError ? r.content_search.median_ms : undefined), "ms", "lower"],
  ["name glob `**/*.lua`", (r) => (r.name_glob_search && !r.name_glob_search.isError ? r.name_glob_search.median_ms : undefined), "ms", "lower"],
  ["recursive tree (5.6k entries)", (r) => (r.recursive_tree && !r.recursive_tree.isError ? r.recursive_tree.median_ms : undefined), "ms", "lower"],
  ["server peak RSS", (r) => (r.server_peak_rss_kb ?? NaN) / 1024, "MiB", "lower"],
];

const fmt = (x) => {
  if (x == null) return "n/a";
  const a = Math.abs(x);
  if (a >= 1000) return Math.round(x).toLocaleString("en-US");
  if (a >= 100) return x.toFixed(0);
  if (a >= 10) return x.toFixed(1);
  if (a >= 1) return x.toFixed(2);
  return x.toFixed(3);
};
const value = (name, getter) => {
  if (!runs[name].length) return null;
  return median(runs[name].map((r) => { const v = getter(r); return v == null ? NaN : v; }));
};

const rows = [];
for (const [label, getter, unit, better] of MEASURES) {
  const a = value("official", getter), b = value("burrow", getter);
  let ratio = "n/a", verdict = "";
  if (a != null && b != null && a !== 0) {
    const q = b / a;
    ratio = `${q >= 10 ? q.toFixed(0) : q >= 1 ? q.toFixed(2) : q.toFixed(3)}×`;
    const good = better === "lower" ? q < 1 : q > 1;
    const close = Math.abs(Math.log(q)) < Math.log(1.1);
    verdict = close ? "≈" : good ? "burrow better" : "official better";
  }
  rows.push(`| ${label} | ${unit} | ${fmt(a)} | ${fmt(b)} | ${ratio} | ${better} | ${verdict} |`);
}

// ---------------------------------------------------------------- context
const sh = (cmd, a) => { try { return execFileSync(cmd, a, { encoding: "utf8" }).trim(); } catch { return null; } };
const first = (name) => runs[name][0];
const toolsUsed = (name) => {
  const r = first(name);
  if (!r) return "not run";
  const t = r.toolsUsed ?? {};
  return `read: \`${t.readTool}\`, search: ${t.searchTool ? `\`${t.searchTool}\`` : "none"}, glob: ${t.globTool ? `\`${t.globTool}\`` : "none"}, tree: ${t.treeTool ? `\`${t.treeTool}\`` : "none"}`;
};
const serverInfo = (name) => {
  const s = first(name)?.serverInfo;
  return s ? `${s.name ?? "?"} ${s.version ?? ""}`.trim() : "—";
};
const bigInfo = (name) => {
  const r = first(name);
  if (!r?.big_read) return "not measured";
  if (r.big_read.error) return `error: ${String(r.big_read.error).replace(/\s+/g, " ").slice(0, 160)}`;
  return `${r.big_read.text_chars?.toLocaleString("en-US")} text chars, ${r.big_read.response_bytes?.toLocaleString("en-US")} bytes on the wire`;
};
const errorsOf = (name) => {
  const out = [];
  for (const r of runs[name]) {
    if (r.small_sequential?.errors) out.push(`${r.small_sequential.errors} failed small reads`);
    if (r.small_pipelined?.errors) out.push(`${r.small_pipelined.errors} failed pipelined reads`);
    for (const k of ["content_search", "name_glob_search", "recursive_tree"]) {
      if (r[k]?.isError) out.push(`${k} returned an error: ${String(r[k].preview).replace(/\s+/g, " ").slice(0, 120)}`);
    }
  }
  return [...new Set(out)];
};

const now = new Date();
const host = first("burrow")?.host ?? first("official")?.host ?? {};
const nproc = sh("nproc", []) ?? String(os.cpus().length);
const kernel = sh("uname", ["-srm"]) ?? `${os.type()} ${os.release()} ${os.arch()}`;
const distro = (() => { try { return /PRETTY_NAME="?([^"\n]*)/.exec(fs.readFileSync("/etc/os-release", "utf8"))?.[1]; } catch { return null; } })();
const nRounds = Math.max(runs.official.length, runs.burrow.length);
const any = first("burrow") ?? first("official");

const md = [];
// The head of the file is reference text (issue 25): the current figures and
// how to reproduce them; their history is the file's git log.
md.push("# Benchmarks", "");
md.push("The current figures of each benchmark in `bench/`: what it measures, what it is compared with,");
md.push("and the command that reproduces it. Earlier figures, and the measurements behind past design");
md.push("choices, are in git: `git log -p docs/benchmarks.md`.", "");
md.push("## How to read these", "");
md.push("- Every figure is a median, of several runs or of each round's medians; the runs alternate with the");
md.push("  **anchor**, timed in the same run on the same workspace (the official server, rg, coreutils, no policy).");
md.push("- Read the **ratios** burrow / anchor: below 1× burrow takes less (time, memory, bytes), except for");
md.push("  calls/s and MiB/s, where higher is better.");
md.push("- Absolute times are noisy: a shared 2-core virtual machine (timer and scheduler jitter, other users'");
md.push("  jobs) moves them by up to 2× between runs, and a row of 10–40 ms by ±0.2× in ratio. Compare ratios");
md.push("  across commits, not milliseconds across machines. Each section names its date and machine (\"this");
md.push("  machine\": the one below).", "");
md.push("## Machine", "");
md.push(`- CPUs: ${nproc} (\`nproc\`)${host.cpuModel ? `, ${host.cpuModel}` : ""}`);
md.push(`- kernel: ${kernel}${distro ? ` (${distro})` : ""}`);
md.push(`- memory: ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB`);
md.push(`- node: ${any?.node ?? process.version}; client: ${any?.client ?? "raw"} (bench.mjs's minimal JSON-RPC client, protocol ${any?.protocol ?? "2025-06-18"})`);
md.push(`- rounds: ${nRounds} per server (median over rounds of each run's medians); load average at start: ${(host.loadavg ?? []).map((x) => x.toFixed(2)).join(" ") || "?"}`);
md.push("");
md.push("## burrow vs the official MCP filesystem server (`make bench`)", "");
const repoDir = path.resolve(path.dirname(new URL(import.meta.url).pathname), "..");
const commit = sh("git", ["-C", repoDir, "rev-parse", "--short", "HEAD"]);
const dirty = commit && sh("git", ["-C", repoDir, "status", "--porcelain", "--untracked-files=no"]);
md.push(`Generated by \`make bench\` (\`bench/run.sh\` → \`bench/report.mjs\`) on ${now.toISOString().replace(/\.\d+Z$/, "Z")}` +
  (commit ? `, burrow at commit \`${commit}\`${dirty ? " (with uncommitted changes)" : ""}` : "") + ", on the machine above.");
md.push("The two servers run back to back, alternating, with the same client (the shared harness's bench.mjs)");
md.push("on the same workspace: start-up, small reads, the whole 50 MiB read, its head and tail, search, glob,");
md.push("tree, and the server's peak RSS. The anchor is the official server.", "");
md.push("### Results", "");
md.push("Medians. Ratio = burrow / official: below 1× means burrow takes less (time, memory, bytes), above 1× means more — except for calls/s and MiB/s, where higher is better. n/a: the server has no such tool (yet) or the measurement failed.", "");
md.push("| measurement | unit | official | burrow | burrow / official | better | verdict |");
md.push("|---|---|---:|---:|---:|---|---|");
md.push(...rows);
md.push("");
md.push("### What was compared", "");
md.push("| | official | burrow |");
md.push("|---|---|---|");
md.push(`| server | ${serverInfo("official")} | ${serverInfo("burrow")} |`);
md.push(`| tools used | ${toolsUsed("official")} | ${toolsUsed("burrow")} |`);
md.push(`| 50 MiB read returned | ${bigInfo("official")} | ${bigInfo("burrow")} |`);
md.push("");
md.push("burrow's `read_file` returns line-numbered text (`N<TAB>line`) and a structured result without");
md.push("the text, so its whole-file response carries ~7 % more text than the official `read_text_file`'s");
md.push("raw content.");
{
  const ob = first("official")?.big_read;
  if (ob && !ob.error && ob.response_bytes > 1.8 * ob.file_bytes) {
    md.push(`The official server's response is ${(ob.response_bytes / ob.file_bytes).toFixed(1)}× the file size on the wire:`);
    md.push("it sends the content twice (as text and again in `structuredContent`).");
  }
  const missing = (name) => {
    const t = first(name)?.toolsUsed;
    if (!t) return [];
    return [["content search", t.searchTool], ["name glob", t.globTool], ["recursive tree", t.treeTool]].filter(([, v]) => !v).map(([k]) => k);
  };
  for (const name of ["official", "burrow"]) {
    const m = missing(name);
    if (m.length) md.push(`The ${name} server has no tool for: ${m.join(", ")} (those rows read n/a).`);
  }
  md.push("");
}
for (const name of ["official", "burrow"]) {
  const errs = errorsOf(name);
  if (o.failed.includes(name)) errs.unshift("a bench run failed (see the `make bench` output)");
  if (errs.length) md.push(`**${name} errors:** ${errs.join("; ")}`, "");
}
md.push("### Commands", "");
md.push("Harness: `shared/bench` (bench.mjs, gen_workspace.mjs; `@modelcontextprotocol/sdk` 1.32.2,");
md.push("`@modelcontextprotocol/server-filesystem` 2026.8.31), copied to a temp dir, `npm ci`, then:", "");
md.push("```sh");
md.push("node gen_workspace.mjs $WS     # small/ (200 × 1 KiB), tree/ (5k files), big.txt (50 MiB, 524,288 lines)");
if (o.cmd.official) md.push(o.cmd.official);
if (o.cmd.burrow) md.push(o.cmd.burrow);
md.push("```", "");
md.push("`@WS@` is the workspace. burrow's read goes through `--read-args` with `limit` 1,000,000");
md.push("(its default page is 2000 lines) and raised caps, so the 50 MiB read returns the whole file as");
md.push("bench.mjs expects; `--head-arg limit` makes the head-100 measurement use `limit: 100`.");
md.push("Raw per-run JSON is kept in `bench/results/` (not committed).", "");

fs.mkdirSync(path.dirname(path.resolve(o.out)), { recursive: true });
// the generated part ends at <!-- report:end -->; the rest of the file
// (the sections bench/grep.sh, policy.lua, edit.sh and http.mjs rewrite
// between their own markers, and the hand-written notes) is kept as it is
md.push("<!-- report:end -->", "");
const old = fs.existsSync(o.out) ? fs.readFileSync(o.out, "utf8") : "";
let keep = old.indexOf("<!-- report:end -->");
if (keep >= 0) keep = old.indexOf("\n", keep) + 1;
else keep = old.indexOf("<!-- grep-bench:start -->"); // a file written before the marker
if (keep > 0) md.push(old.slice(keep).replace(/^\n+/, ""));
fs.writeFileSync(o.out, md.join("\n"));
console.log(`report: wrote ${o.out}`);
console.log(rows.join("\n"));
