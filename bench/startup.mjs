// bench/startup.mjs: spawn `BIN mcp --root ROOT` RUNS times and time each
// from spawn to the initialize result (raw JSON-RPC, no SDK), against the
// floor in the same run: bench/init_floor.c, a static C program that only
// answers initialize, built here with `cc -O2 -static`. The programs take
// turns (floor, BIN, BIN2, ... each round), so the machine's load falls on
// all alike; prints each one's median and minimum in ms and its median
// against the floor's. Then, for each BIN, in as many runs again, ready:
// spawn to the tools/list result of a client that sends
// notifications/initialized and tools/list once initialize is answered, as
// clients do (a server that answers initialize before its workspace opens
// still opens it before that answer; the floor answers no tools/list).
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

const init_msg = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } } }) + "\n";

const ready = JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }) + "\n" +
  JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/list" }) + "\n";

// [ms to the initialize result, ms to the tools/list result (tools: true)]
function once(cmd, args, tools) {
  return new Promise((res) => {
    const t0 = process.hrtime.bigint();
    const ms = () => Number(process.hrtime.bigint() - t0) / 1e6;
    const p = spawn(cmd, args, { stdio: ["pipe", "pipe", "ignore"] });
    let buf = "", init = null;
    const done = (t) => { p.kill(); p.on("exit", () => res([init, t])); };
    p.stdout.on("data", (d) => {
      buf += d;
      if (init === null && buf.includes('"id":1')) {
        init = ms();
        if (!tools) return done(null);
        p.stdin.write(ready);
      }
      if (tools && init !== null && buf.includes('"id":2')) done(ms());
    });
    p.stdin.write(init_msg);
  });
}

const progs = [["floor (bench/init_floor.c, static)", floor, []],
  ...[bin, ...more].map((b) => [b, b, ["mcp", "--root", root]])];
const times = progs.map(() => []);
for (let i = 0; i < runs; i++)
  for (let k = 0; k < progs.length; k++) times[k].push((await once(progs[k][1], progs[k][2], false))[0]);
// then, apart (a longer run would change the first one's conditions), to ready
const readies = progs.map(() => []);
for (let i = 0; i < runs; i++)
  for (let k = 1; k < progs.length; k++) readies[k].push((await once(progs[k][1], progs[k][2], true))[1]);
fs.rmSync(dir, { recursive: true, force: true });

const median = (t) => { const s = [...t].sort((a, b) => a - b); return s[s.length >> 1]; };
const f = median(times[0]);
console.log(`spawn -> initialize result, ${runs} runs each, taking turns; load average ${os.loadavg().map((x) => x.toFixed(2)).join(" ")}`);
for (let k = 0; k < progs.length; k++)
  console.log(`${progs[k][0]}: median ${median(times[k]).toFixed(2)} ms, min ${Math.min(...times[k]).toFixed(2)} ms, ${(median(times[k]) / f).toFixed(2)}x the floor`);
console.log(`spawn -> tools/list result (initialized and tools/list sent once initialize is answered), ${runs} more runs each`);
for (let k = 1; k < progs.length; k++)
  console.log(`${progs[k][0]}: median ${median(readies[k]).toFixed(2)} ms, min ${Math.min(...readies[k]).toFixed(2)} ms`);
