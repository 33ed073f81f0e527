// Issue 43: Prometheus metrics on a listener of their own (http.metrics).
// A real Prometheus (Debian's `prometheus`), started here on a free port
// with a temporary config (scrape_interval 1s) and storage, scrapes
// `burrow mcp --http` while two tenants' official SDK clients make calls,
// some of them denied by a policy; its query API must then return the
// calls by tenant, tool and outcome, the latencies' counts, the denials
// by policy, the unknown tool call and the open sessions. Also: /metrics
// is 404 on the MCP listener; the metrics listener refuses a non-loopback
// address unless http.metrics.allow_remote says so, and a Host that does
// not name loopback. Every wait is for a state (an answer, a query's
// value), never a time.
//
//   cd test/e2e && npm ci && node --test metrics.test.mjs     (needs prometheus)

import { test, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { freePort, rawRequest, runToEnd, startHttp, waitFor } from "./http_helpers.mjs";

const T = { timeout: 180_000 };
const sha = (t) => createHash("sha256").update(t).digest("hex");
const TOKEN_A = "metrics-test-token-alpha-0123", TOKEN_B = "metrics-test-token-beta-4567";
const dirs = [], procs = [], clients = [], transports = [];
after(async () => {
  for (const c of clients) await c.close().catch(() => {});
  for (const p of procs) if (p.exitCode === null && !p.signalCode) p.kill("SIGKILL");
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

function tmp() {
  const d = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "burrow-metrics-")));
  dirs.push(d);
  return d;
}

// A tenant "default" (secrets denies .env) and "beta" (readonly denies
// every write), a token each; metrics on a free loopback port.
function setup(metrics = "{listen: \"127.0.0.1:0\"}") {
  const dir = tmp();
  fs.mkdirSync(path.join(dir, "ws"));
  fs.mkdirSync(path.join(dir, "wsb"));
  fs.writeFileSync(path.join(dir, "ws", "notes.txt"), "alpha\n");
  fs.writeFileSync(path.join(dir, "ws", ".env"), "KEY=secret\n");
  fs.writeFileSync(path.join(dir, "wsb", "b.txt"), "bravo\n");
  // a write under ask/ is put to the client (an elicitation)
  fs.writeFileSync(path.join(dir, "ask.lua"), `return { name = "ask", check = function(r)
    if r.operation == "write" and r.path:find("^ask/") then return "ask", "a write under ask/" end return "allow" end }\n`);
  fs.writeFileSync(path.join(dir, "beta.yaml"), "roots: [wsb]\ntools: [read_file, write_file]\npolicies: [default, readonly]\n");
  fs.writeFileSync(path.join(dir, "burrow.yaml"), [
    "roots: [ws]",
    "tools: [read_file, write_file, list_dir]",
    "policies: [default, secrets, ./ask.lua]",
    "http:",
    '  access_log: "off"',
    `  metrics: ${metrics}`,
    "  tenants:",
    "    beta: {config: beta.yaml}",
    "  tokens:",
    `    - {sha256: ${sha(TOKEN_A)}}`,
    `    - {sha256: ${sha(TOKEN_B)}, tenant: beta}`,
    "",
  ].join("\n"));
  return dir;
}

async function serve(dir) {
  const s = await startHttp(["--config", path.join(dir, "burrow.yaml")]);
  procs.push(s.proc);
  const m = s.stderr().match(/metrics at (http:\/\/\S+\/metrics)/);
  assert.ok(m, `the banner names the metrics URL: ${s.stderr()}`);
  s.metrics = m[1];
  return s;
}

async function connect(url, token, answers = null) {
  const transport = new StreamableHTTPClientTransport(new URL(url),
    { requestInit: { headers: { authorization: `Bearer ${token}` } } });
  const client = new Client({ name: "metrics-test", version: "1" }, { capabilities: answers ? { elicitation: {} } : {} });
  // a policy's ask: answered from the list, in order
  if (answers) client.setRequestHandler(ElicitRequestSchema, async () => answers.shift());
  await client.connect(transport);
  clients.push(client);
  transports.push(transport);
  return client;
}

// Prometheus on a free port, scraping target every second, its storage
// in a temporary directory; resolves once /-/ready answers 200.
async function startPrometheus(target) {
  const dir = tmp();
  const port = await freePort();
  fs.writeFileSync(path.join(dir, "prometheus.yml"), [
    "global:",
    "  scrape_interval: 1s",
    "  evaluation_interval: 1s",
    "scrape_configs:",
    "  - job_name: burrow",
    "    static_configs:",
    `      - targets: ["${target}"]`,
    "",
  ].join("\n"));
  const proc = spawn("prometheus", [`--config.file=${path.join(dir, "prometheus.yml")}`,
    `--storage.tsdb.path=${path.join(dir, "data")}`, `--web.listen-address=127.0.0.1:${port}`],
  { stdio: ["ignore", "ignore", "pipe"] });
  procs.push(proc);
  let log = "";
  proc.stderr.on("data", (d) => { log += d; });
  const base = `http://127.0.0.1:${port}`;
  await waitFor(async () => {
    if (proc.exitCode !== null) throw new Error(`prometheus exited ${proc.exitCode}: ${log}`);
    try { return (await fetch(`${base}/-/ready`)).status === 200; } catch { return false; }
  }, () => `prometheus ready on ${port}: ${log.slice(-2000)}`, 60_000, 100);
  return { base, log: () => log };
}

// An instant query: [{metric, value}] with the value as a number.
async function query(prom, q) {
  const r = await fetch(`${prom.base}/api/v1/query?query=${encodeURIComponent(q)}`);
  const j = await r.json();
  if (j.status !== "success") throw new Error(`query ${q}: ${JSON.stringify(j)}`);
  return j.data.result.map((x) => ({ metric: x.metric, value: Number(x.value[1]) }));
}

test("Prometheus scrapes the calls by tenant and tool, the denials and the sessions", T, async () => {
  assert.equal(spawnSync("prometheus", ["--version"]).status, 0,
    "prometheus is missing: apt-get install --no-install-recommends prometheus (make deps)");
  const dir = setup();
  const s = await serve(dir);
  const prom = await startPrometheus(new URL(s.metrics).host);

  const a = await connect(s.url, TOKEN_A, [{ action: "accept", content: { approve: true } }, { action: "decline" }]);
  const b = await connect(s.url, TOKEN_B);
  for (let i = 0; i < 3; i++) {
    const r = await a.callTool({ name: "read_file", arguments: { path: "notes.txt" } });
    assert.ok(!r.isError, JSON.stringify(r));
  }
  for (let i = 0; i < 2; i++) { // the secrets policy
    const r = await a.callTool({ name: "read_file", arguments: { path: ".env" } });
    assert.equal(r._meta?.["burrow/code"], "POLICY_DENIED", JSON.stringify(r));
  }
  const rb = await b.callTool({ name: "read_file", arguments: { path: "b.txt" } });
  assert.ok(!rb.isError, JSON.stringify(rb));
  for (let i = 0; i < 2; i++) { // the readonly policy
    const r = await b.callTool({ name: "write_file", arguments: { path: "new.txt", content: "x" } });
    assert.equal(r._meta?.["burrow/code"], "POLICY_DENIED", JSON.stringify(r));
  }
  await assert.rejects(a.callTool({ name: "no_such_tool", arguments: {} }), /not found/);
  const yes = await a.callTool({ name: "write_file", arguments: { path: "ask/yes.txt", content: "y" } });
  assert.ok(!yes.isError, JSON.stringify(yes));
  const no = await a.callTool({ name: "write_file", arguments: { path: "ask/no.txt", content: "n" } });
  assert.equal(no._meta?.["burrow/code"], "POLICY_DENIED", JSON.stringify(no));

  // what Prometheus has for each, waited for (scrapes come every second)
  const want = [
    ['burrow_tool_calls_total{tenant="default",tool="read_file",outcome="ok"}', 3],
    ['burrow_tool_calls_total{tenant="default",tool="read_file",outcome="denied",code="POLICY_DENIED"}', 2],
    ['burrow_tool_calls_total{tenant="beta",tool="read_file",outcome="ok"}', 1],
    ['burrow_tool_calls_total{tenant="beta",tool="write_file",outcome="denied",code="POLICY_DENIED"}', 2],
    ['burrow_tool_call_duration_seconds_count{tenant="default",tool="read_file"}', 5],
    ['burrow_tool_call_duration_seconds_bucket{tenant="beta",tool="write_file",le="+Inf"}', 2],
    ['burrow_policy_denials_total{tenant="default",policy="secrets"}', 2],
    ['burrow_policy_denials_total{tenant="beta",policy="readonly"}', 2],
    ['burrow_policy_denials_total{tenant="beta",policy="secrets"}', 0], // every configured policy's series, from the start
    ['burrow_unknown_tool_calls_total{tenant="default"}', 1],
    ['burrow_approvals_total{tenant="default",result="approved"}', 1],
    ['burrow_approvals_total{tenant="default",result="denied"}', 1],
    ['burrow_tool_calls_total{tenant="default",tool="write_file",outcome="ok"}', 1],
    ['burrow_tool_calls_total{tenant="default",tool="write_file",outcome="denied",code="POLICY_DENIED"}', 1],
    ['burrow_unknown_tool_calls_total{tenant="beta"}', 0],
    ['burrow_http_sessions{tenant="default"}', 1],
    ['burrow_http_sessions{tenant="beta"}', 1],
    ['up{job="burrow"}', 1],
  ];
  let last = {};
  await waitFor(async () => {
    for (const [q, v] of want) {
      const got = await query(prom, q);
      last[q] = got.map((g) => g.value);
      if (v === null ? got.length !== 0 : !(got.length === 1 && got[0].value === v)) return false;
    }
    return true;
  }, () => `Prometheus's answers ${JSON.stringify(last)} to become ${JSON.stringify(want)}`, 90_000, 250);

  // by tenant and tool, as a dashboard asks
  const byTool = await query(prom, "sum by (tenant, tool) (burrow_tool_calls_total)");
  const table = Object.fromEntries(byTool.map((x) => [`${x.metric.tenant}/${x.metric.tool}`, x.value]));
  assert.deepEqual(table, { "default/read_file": 5, "default/write_file": 2, "beta/read_file": 1, "beta/write_file": 2 });
  // the agent's unknown tool name is in no series
  const names = await (await fetch(`${prom.base}/api/v1/label/tool/values`)).json();
  assert.ok(!names.data.includes("no_such_tool"), JSON.stringify(names.data));

  // sessions ended (DELETE): the gauge goes back to 0
  for (const t of transports.splice(0)) await t.terminateSession();
  for (const c of clients.splice(0)) await c.close();
  await waitFor(async () => {
    const got = await query(prom, "sum(burrow_http_sessions)");
    return got.length === 1 && got[0].value === 0;
  }, "the sessions gauge back to 0 once the clients closed", 60_000, 250);
});

test("/metrics is 404 on the MCP listener; the metrics listener checks Host", T, async () => {
  const dir = setup();
  const s = await serve(dir);
  const mcp = await rawRequest(s.url.replace(/\/mcp$/, "/metrics"), { method: "GET",
    headers: { authorization: `Bearer ${TOKEN_A}` } });
  assert.equal(mcp.status, 404, mcp.body);
  assert.ok(!mcp.body.includes("burrow_"), mcp.body);
  const ok = await rawRequest(s.metrics, { method: "GET" });
  assert.equal(ok.status, 200);
  assert.match(ok.headers["content-type"], /^text\/plain; version=0\.0\.4/);
  // DNS rebinding: a page of another name that resolves to 127.0.0.1
  const rebound = await rawRequest(s.metrics, { method: "GET", headers: { host: `evil.example:${new URL(s.metrics).port}` } });
  assert.equal(rebound.status, 403, rebound.body);
  const other = await rawRequest(s.metrics.replace(/\/metrics$/, "/mcp"), { method: "GET" });
  assert.equal(other.status, 404);
  const post = await rawRequest(s.metrics, { method: "POST", body: "x" });
  assert.equal(post.status, 405);
});

test("a non-loopback metrics address is refused unless allow_remote says so", T, async () => {
  const refused = await runToEnd(["mcp", "--config", path.join(setup('{listen: "0.0.0.0:0"}'), "burrow.yaml"),
    "--http", "127.0.0.1:0"]);
  assert.notEqual(refused.code, 0);
  assert.match(refused.stderr, /refusing to serve metrics on 0\.0\.0\.0: .*http\.metrics\.allow_remote: true/);
  const s = await serve(setup('{listen: "0.0.0.0:0", allow_remote: true}'));
  const port = new URL(s.metrics).port;
  const r = await rawRequest(`http://127.0.0.1:${port}/metrics`, { method: "GET", headers: { host: `metrics.internal:${port}` } });
  assert.equal(r.status, 200, "allowed remote: any Host (the operator opened it)");
  assert.match(r.body, /^# HELP burrow_/m);
});

test("http.metrics in the config: a bad key or address is an error at its line", T, async () => {
  const dir = setup('{listen: "127.0.0.1:0", port: 9}');
  const r = await runToEnd(["check", "--config", path.join(dir, "burrow.yaml")]);
  assert.notEqual(r.code, 0);
  assert.match(r.stderr, /burrow\.yaml:\d+:\d+: unknown key "port" in http\.metrics/);
});
