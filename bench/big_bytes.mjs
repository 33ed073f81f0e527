// bench/big_bytes.mjs: the whole-file read of WS/big.txt over MCP stdio,
// timed by a client that only counts the bytes: the first and the last byte
// of each reply, medians over RUNS. What the server and the pipe cost,
// without the client's own work on the reply (joining its chunks, decoding
// and parsing 57 MB), which dominates bench.mjs's figure on some machines
// (docs/benchmarks.md, "The 50 MiB read, bytes only").
//
//   node bench/big_bytes.mjs BIN WS [RUNS] [OFFICIAL]
//
// burrow reads with read_file (limit 1,000,000 lines, caps raised to
// 64 MiB, as make bench does). With OFFICIAL (the official server's
// dist/index.js, e.g. from bench.mjs's harness), that server is timed in
// the same run on read_text_file of the same file, the two alternating
// read by read, and the ratio of the medians is printed. A reply that is
// an error, or shorter than the file, fails the run. With BENCH_OUT set
// (make bench sets it), the table goes into that file between the
// bytes-bench markers.
import { spawn } from "node:child_process";
import { statSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { writeSection } from "./section.mjs";

const [bin, ws, runsArg, official] = process.argv.slice(2);
if (!bin || !ws) { console.error("usage: node bench/big_bytes.mjs BIN WS [RUNS] [OFFICIAL]"); process.exit(2); }
const runs = +runsArg || 10;
const file = path.resolve(ws, "big.txt");
const size = statSync(file).size;

function server(name, cmd, args, tool) {
  const p = spawn(cmd[0], cmd.slice(1), { stdio: ["pipe", "pipe", "ignore"] });
  let t0 = 0, first = 0, bytes = 0, tail = "", done = null, id = 0;
  p.stdout.on("data", (d) => {
    if (!first) first = performance.now();
    bytes += d.length;
    tail = (tail + d.subarray(Math.max(0, d.length - 64)).toString("latin1")).slice(-64);
    if (d[d.length - 1] === 10 && done) { const r = done; done = null; r(performance.now()); }
  });
  const send = (m) => p.stdin.write(JSON.stringify({ jsonrpc: "2.0", ...m }) + "\n");
  const call = (m) => new Promise((res) => { done = res; first = 0; bytes = 0; t0 = performance.now(); send(m); });
  const s = { name, fb: [], lb: [], bytes: 0 };
  s.start = async () => {
    await call({ id: id++, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "big_bytes", version: "1" } } });
    send({ method: "notifications/initialized" });
  };
  s.read = async () => {
    const end = await call({ id: id++, method: "tools/call", params: { name: tool, arguments: args } });
    if (bytes < size || tail.includes('"isError":true')) {
      console.error(`big_bytes: ${name}'s reply is ${bytes} bytes for a ${size}-byte file (or an error): ...${tail}`);
      process.exit(1);
    }
    s.fb.push(first - t0);
    s.lb.push(end - t0);
    s.bytes = bytes;
  };
  s.stop = () => { p.stdin.end(); p.kill(); };
  return s;
}

const servers = [server("burrow", [bin, "mcp", "--root", ws, "--cap", "max_result_bytes=64MiB", "--cap", "max_file_size=64MiB"],
  { path: "big.txt", limit: 1000000 }, "read_file")];
if (official) servers.push(server("official", ["node", official, ws], { path: file }, "read_text_file"));
for (const s of servers) await s.start();
for (let i = 0; i < runs; i++) for (const s of servers) await s.read();
for (const s of servers) s.stop();

const med = (a) => a.slice().sort((x, y) => x - y)[a.length >> 1];
for (const s of servers)
  console.log(`${s.name}: first byte median ${med(s.fb).toFixed(1)} ms, last byte median ${med(s.lb).toFixed(1)} ms, ` +
    `${s.bytes} bytes (all last: ${s.lb.map((x) => x.toFixed(0)).join(" ")})`);
if (!official) process.exit(0);
const ratio = med(servers[1].lb) / med(servers[0].lb);
console.log(`official / burrow, last byte: ${ratio.toFixed(2)}×`);
if (process.env.BENCH_OUT) {
  const row = (s) => `| ${s.name} | ${med(s.fb).toFixed(1)} | ${med(s.lb).toFixed(1)} | ${s.bytes.toLocaleString("en-US")} |`;
  writeSection(process.env.BENCH_OUT, "bytes-bench", [
    `The whole read of the ${(size / 1048576).toFixed(0)} MiB \`big.txt\` timed by a client that only counts the bytes`,
    `(\`node bench/big_bytes.mjs BIN WS ${runs} OFFICIAL\`, ${new Date().toISOString().slice(0, 10)}): medians of ${runs} reads each,`,
    "the two servers alternating read by read; load average at the end: " + os.loadavg().map((x) => x.toFixed(2)).join(" ") + ".",
    "The table at the top times the same read in bench.mjs's client, which also joins, decodes and parses the reply.",
    "",
    "| server | first byte ms | last byte ms | reply bytes |",
    "|---|---:|---:|---:|",
    row(servers[1]), row(servers[0]),
    "",
    `**The official server takes ${ratio.toFixed(1)}× burrow's time to the last byte.**`,
  ].join("\n"), "## The 50 MiB read, bytes only (`bench/big_bytes.mjs`)");
}
