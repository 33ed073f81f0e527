// bench/startup.mjs: spawn `BIN mcp --root ROOT` RUNS times and time each
// from spawn to the initialize result (raw JSON-RPC, no SDK), against the
// floor in the same run: bench/init_floor.c, a static C program that only
// answers initialize, built here with `cc -O2 -static`. The programs take
// turns (floor, BIN, BIN2, ... each round), so the machine's load falls on
// all alike; prints each one's median and minimum in ms and its median
// against the floor's.
//   node bench/startup.mjs BIN RUNS ROOT [BIN2 ...]
// (an installed binary loads precompiled Lua: see docs/benchmarks.md, Start-up).
import { spawn, execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

const [bin, runsArg, root, ...more] = process.argv.slice(2);
if (!bin || !root) {
  console.error("usage: node bench/startup.mjs BIN RUNS ROOT [BIN2 ...]");
  process.exit(2);
}
const runs = +runsArg || 30;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "burrow-floor-"));
const floor = path.join(dir, "init_floor");
const src = new URL("init_floor.c", import.meta.url).pathname;
try {
  execFileSync("cc", ["-O2", "-static", "-o", floor, src]);
} catch {
  console.error("startup: cc -static failed (libc6-dev's libc.a?); the floor is linked dynamically");
  execFileSync("cc", ["-O2", "-o", floor, src]);
}

const init = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } } }) + "\n";

function once(cmd, args) {
  return new Promise((res) => {
    const t0 = process.hrtime.bigint();
    const p = spawn(cmd, args, { stdio: ["pipe", "pipe", "ignore"] });
    let buf = "";
    p.stdout.on("data", (d) => {
      buf += d;
      if (buf.includes('"id":1')) {
        const ms = Number(process.hrtime.bigint() - t0) / 1e6;
        p.kill();
        p.on("exit", () => res(ms));
      }
    });
    p.stdin.write(init);
  });
}

const progs = [["floor (bench/init_floor.c, static)", floor, []],
  ...[bin, ...more].map((b) => [b, b, ["mcp", "--root", root]])];
const times = progs.map(() => []);
for (let i = 0; i < runs; i++)
  for (let k = 0; k < progs.length; k++) times[k].push(await once(progs[k][1], progs[k][2]));
fs.rmSync(dir, { recursive: true, force: true });

const median = (t) => { const s = [...t].sort((a, b) => a - b); return s[s.length >> 1]; };
const f = median(times[0]);
console.log(`spawn -> initialize result, ${runs} runs each, taking turns; load average ${os.loadavg().map((x) => x.toFixed(2)).join(" ")}`);
for (let k = 0; k < progs.length; k++)
  console.log(`${progs[k][0]}: median ${median(times[k]).toFixed(2)} ms, min ${Math.min(...times[k]).toFixed(2)} ms, ${(median(times[k]) / f).toFixed(2)}x the floor`);
