// make soak: several MCP clients (the official SDK client), each driving
// its own `burrow mcp` over stdio on one shared tree, for SOAK_SECONDS
// (default 1800): reads, writes, edits, greps, globs, moves, cancelled
// greps, pings, and policy reloads (SIGHUP, with the config rewritten).
// Each client owns a folder and keeps a model of every file in it; all
// clients also append their own lines to one shared file with
// compare-and-set edits. It checks, and writes to docs/benchmarks.md:
//   - no server crashed (every process alive to the end, exit 0 at close);
//   - RSS and open fds of each server, sampled every 10 s: the end within
//     10% (RSS) and equal (fds) of the level after the warm-up;
//   - every file equals its model; every reported shared append is there
//     exactly once.
//
//   node test/soak/soak.mjs            (SOAK_SECONDS, SOAK_CLIENTS, BURROW_BIN, SOAK_OUT)

import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { createRequire } from "node:module";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const REPO = path.resolve(HERE, "..", "..");
// the pinned SDK of the e2e suite
const req = createRequire(path.join(REPO, "test", "e2e", "package.json"));
const { Client } = await import(pathToFileURL(req.resolve("@modelcontextprotocol/sdk/client/index.js")).href);
const { StdioClientTransport } = await import(pathToFileURL(req.resolve("@modelcontextprotocol/sdk/client/stdio.js")).href);

const SECONDS = Number(process.env.SOAK_SECONDS || 1800);
const CLIENTS = Number(process.env.SOAK_CLIENTS || 3);
const BIN = path.resolve(process.env.BURROW_BIN || path.join(REPO, "build", "burrow"));
const OUT = process.env.SOAK_OUT || path.join(REPO, "docs", "benchmarks.md");
const WARMUP = Math.min(120, SECONDS / 5); // seconds before the reference sample

const TMP = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "burrow-soak-")));
const ROOT = path.join(TMP, "ws");
const CONFIG = path.join(TMP, "burrow.yaml");
fs.mkdirSync(ROOT);
for (let i = 0; i < 400; i++) { // something to grep
  const d = path.join(ROOT, "tree", `d${i % 20}`);
  fs.mkdirSync(d, { recursive: true });
  fs.writeFileSync(path.join(d, `f${i}.txt`), `file ${i}\n${"lorem ipsum dolor\n".repeat(50)}needle ${i}\n`);
}
fs.writeFileSync(path.join(ROOT, "tree", ".env"), "TOKEN=soak-secret\n");
fs.writeFileSync(path.join(ROOT, "shared.log"), "");
const configs = [
  "policies: [default, secrets, {name: quotas, max_calls_per_minute: 100000}]\n",
  "policies: [default, secrets]\n",
];
fs.writeFileSync(CONFIG, configs[0]);

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const text = (r) => (r.content || []).map((c) => c.text || "").join("\n");
const sample = (pid) => {
  const status = fs.readFileSync(`/proc/${pid}/status`, "utf8");
  const rss = Number(/VmRSS:\s+(\d+)/.exec(status)[1]);
  const fds = fs.readdirSync(`/proc/${pid}/fd`).length;
  return { rss, fds };
};

class Agent {
  constructor(id) {
    this.id = id;
    this.dir = `c${id}`;
    this.model = new Map(); // rel path -> content
    this.appended = []; // lines this client's shared appends reported done
    this.calls = 0;
    this.errors = new Map();
    fs.mkdirSync(path.join(ROOT, this.dir));
  }

  async start() {
    // the undo store is bounded by max_undo_bytes: a small cap makes it
    // reach its bound during the warm-up, so growth after it is a leak
    this.transport = new StdioClientTransport({
      command: BIN, args: ["mcp", "--root", ROOT, "--config", CONFIG, "--cap", "max_undo_bytes=256KiB"], stderr: "ignore",
    });
    this.client = new Client({ name: `soak-${this.id}`, version: "1.0" });
    await this.client.connect(this.transport);
    this.pid = this.transport.pid;
  }

  async call(name, args, opts) {
    this.calls++;
    const r = await this.client.callTool({ name, arguments: args }, undefined, opts);
    if (r.isError) {
      const code = (r._meta || {})["burrow/code"] || "?";
      this.errors.set(code, (this.errors.get(code) || 0) + 1);
    }
    return r;
  }

  file(i) { return `${this.dir}/f${i % 8}.txt`; }

  async step(n) {
    const rel = this.file(n);
    switch (n % 12) {
      case 0: case 1: { // write
        const body = `client ${this.id} step ${n}\n${"x".repeat(n % 500)}\nend\n`;
        const r = await this.call("write_file", { path: rel, content: body });
        if (!r.isError) this.model.set(rel, body);
        break;
      }
      case 2: { // edit what we wrote
        if (!this.model.has(rel)) break;
        const r = await this.call("edit_file", { path: rel, old_text: "end\n", new_text: `end ${n}\n` });
        if (!r.isError) this.model.set(rel, this.model.get(rel).replace("end\n", `end ${n}\n`));
        break;
      }
      case 3: { // read back and compare with the model
        if (!this.model.has(rel)) break;
        const r = await this.call("read_file", { path: rel, encoding: "base64" });
        if (!r.isError) {
          const got = Buffer.from(r.structuredContent.content, "base64").toString();
          if (got !== this.model.get(rel)) throw new Error(`client ${this.id}: ${rel} differs from the model`);
        }
        break;
      }
      case 4: { // a shared append, compare-and-set, retried
        const line = `c${this.id}-${n}`;
        for (let tries = 0; tries < 20; tries++) {
          const r = await this.call("append_file", { path: "shared.log", content: line + "\n" });
          if (!r.isError) { this.appended.push(line); break; }
          await sleep(5);
        }
        break;
      }
      case 5: await this.call("grep", { pattern: "needle 1[0-9]", path: "tree", output_mode: "count" }); break;
      case 6: await this.call("glob", { pattern: "**/*.txt", path: "tree", max_results: 50 }); break;
      case 7: { // move there and back
        if (!this.model.has(rel)) break;
        const to = `${this.dir}/moved.txt`;
        const r = await this.call("move", { source: rel, destination: to, overwrite: true });
        if (!r.isError) {
          const back = await this.call("move", { source: to, destination: rel, overwrite: true });
          if (back.isError) { this.model.delete(rel); this.model.set(to, this.model.get(rel)); }
        }
        break;
      }
      case 8: { // a grep cancelled by the client
        const ac = new AbortController();
        const p = this.call("grep", { pattern: "(?:[a-z]+\\s+){1,40}[0-9]", path: "tree" }, { signal: ac.signal })
          .catch(() => null);
        setTimeout(() => ac.abort(), 20);
        await p;
        break;
      }
      case 9: await this.client.ping(); break;
      case 10: await this.call("list_dir", { path: this.dir }); break;
      case 11: { // a denied read: the refusal path too
        const r = await this.call("read_file", { path: "tree/.env" });
        if (!r.isError || text(r).includes("soak-secret")) throw new Error("the secret was read");
        break;
      }
    }
  }
}

const agents = [];
for (let i = 0; i < CLIENTS; i++) agents.push(new Agent(i));
for (const a of agents) await a.start();

const started = Date.now();
const deadline = started + SECONDS * 1000;
const samples = agents.map(() => []);
let reloads = 0;
let failure = null;

const sampler = setInterval(() => {
  const t = (Date.now() - started) / 1000;
  agents.forEach((a, i) => { try { samples[i].push({ t, ...sample(a.pid) }); } catch (e) { failure ||= e; } });
}, 10_000);
const reloader = setInterval(() => { // policy reloads: the config changes, SIGHUP
  reloads++;
  fs.writeFileSync(CONFIG, configs[reloads % 2]);
  for (const a of agents) { try { process.kill(a.pid, "SIGHUP"); } catch (e) { failure ||= e; } }
}, 15_000);

// Quiet points: every client finishes its call and waits, then each
// server's RSS and fds are read with nothing in flight (a sample taken
// during a grep counts its walker's directory fds), once the server has
// been quiet long enough to collect its garbage and give the memory back
// (burrow.mcp does that after 0.5 s without a message): what is left is
// what it holds, not what the collector had not reached yet.
let paused = false;
const quiet = [];
async function quiesce(label) {
  paused = true;
  while (!agents.every((a) => a.idle)) await sleep(5);
  await sleep(1000);
  quiet.push({ label, t: (Date.now() - started) / 1000, at: agents.map((a) => sample(a.pid)) });
  paused = false;
}
const marks = [WARMUP, ...Array.from({ length: 6 }, (_, i) => WARMUP + (i + 1) * (SECONDS - WARMUP) / 7)];
const quieter = (async () => {
  for (const m of marks) {
    while (Date.now() < started + m * 1000 && !failure) await sleep(200);
    if (failure || Date.now() >= deadline) break;
    await quiesce(quiet.length ? `${Math.round(m)} s` : "after warm-up");
  }
})();
await Promise.all(agents.map(async (a) => {
  let n = 0;
  while (Date.now() < deadline && !failure) {
    while (paused) { a.idle = true; await sleep(5); }
    a.idle = false;
    try { await a.step(n++); } catch (e) { failure ||= e; }
  }
  a.idle = true;
}));
await quieter;
await sleep(1000);
quiet.push({ label: "end", t: (Date.now() - started) / 1000, at: agents.map((a) => sample(a.pid)) });
clearInterval(sampler);
clearInterval(reloader);
agents.forEach((a, i) => samples[i].push({ t: (Date.now() - started) / 1000, ...sample(a.pid) }));

// the files against the models, the shared appends
const problems = [];
if (failure) problems.push(`failure: ${failure.message || failure}`);
for (const a of agents) {
  for (const [rel, body] of a.model) {
    const got = fs.readFileSync(path.join(ROOT, rel), "utf8");
    if (got !== body) problems.push(`${rel} differs from the model`);
  }
}
const shared = fs.readFileSync(path.join(ROOT, "shared.log"), "utf8").split("\n").filter(Boolean);
const counts = new Map();
for (const l of shared) counts.set(l, (counts.get(l) || 0) + 1);
let lost = 0, dup = 0;
for (const a of agents) for (const l of a.appended) { const c = counts.get(l) || 0; if (c === 0) lost++; if (c > 1) dup++; }
if (lost || dup) problems.push(`shared appends: ${lost} lost, ${dup} duplicated`);

const rows = [];
agents.forEach((a, i) => {
  // the quiet points: after the warm-up against the end
  const s = samples[i];
  const ref = quiet[0].at[i], end = quiet[quiet.length - 1].at[i];
  const trend = quiet.map((q) => q.at[i].rss).join(" → ");
  const drift = (end.rss - ref.rss) / ref.rss;
  if (Math.abs(drift) > 0.10) problems.push(`server ${i}: RSS ${ref.rss} -> ${end.rss} KiB (${(drift * 100).toFixed(1)}%)`);
  if (end.fds !== ref.fds) problems.push(`server ${i}: fds ${ref.fds} -> ${end.fds}`);
  const errs = [...a.errors].map(([k, v]) => `${k} ${v}`).join(", ") || "none";
  rows.push(`| ${i} | ${a.calls} | ${s[0].rss} / ${ref.rss} / ${end.rss} KiB (quiet points: ${trend}) | ${s[0].fds} / ${ref.fds} / ${end.fds} | ${errs} |`);
});
for (const a of agents) {
  try { await a.client.close(); } catch (e) { problems.push(`close: ${e.message}`); }
}

const minutes = ((Date.now() - started) / 60000).toFixed(1);
const calls = agents.reduce((s, a) => s + a.calls, 0);
const report = [
  "<!-- soak -->",
  "## Soak (`make soak`)",
  "",
  `${new Date().toISOString().slice(0, 10)}: ${CLIENTS} clients, each its own \`burrow mcp\` on one shared tree, ${minutes} min,`,
  `${calls} calls (reads, writes, edits, compare-and-set appends to one shared file, greps, globs, moves,`,
  `cancelled greps, pings, denied reads), ${reloads} policy reloads (config rewritten + SIGHUP).`,
  `Shared appends: ${agents.reduce((s, a) => s + a.appended.length, 0)} reported, ${lost} lost, ${dup} duplicated.`,
  `Result: ${problems.length ? "FAIL: " + problems.join("; ") : "pass (no crash, RSS within 10% and fds equal after the warm-up, every file equal to its model)"}.`,
  "",
  `| server | calls | RSS start / after the ${WARMUP} s warm-up / end (nothing in flight) | fds start / after warm-up / end | error results by code |`,
  "|---|---|---|---|---|",
  ...rows,
  "<!-- /soak -->",
].join("\n");
console.log(report);
if (process.env.SOAK_OUT !== "") {
  let doc = fs.existsSync(OUT) ? fs.readFileSync(OUT, "utf8") : "";
  const re = /<!-- soak -->[\s\S]*?<!-- \/soak -->/;
  doc = re.test(doc) ? doc.replace(re, report) : doc + "\n" + report + "\n";
  fs.writeFileSync(OUT, doc);
}
fs.rmSync(TMP, { recursive: true, force: true });
console.log(`${problems.length ? 0 : 1} passed, ${problems.length ? 1 : 0} failed`);
process.exit(problems.length ? 1 : 0);
