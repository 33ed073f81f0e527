// Issues 40 and 41: the listener serves many long streams on a fixed pool
// of epoll threads. Tenant A opens 2,000 subscriptions/listen streams (MCP
// 2026-07-28), each on a connection of its own: those past its
// http.tenants.a.max_listens get 429 naming the cap, tenant B's read is
// answered meanwhile, the server's threads stay few (no thread a
// connection), and once A closes its streams the server's fds go back to
// their baseline (a suspended stream is probed, so a closed one is found).
// The server may hold 65,536 fds (RLIMIT_NOFILE set by the shell that
// starts it). At 2c3d1e0 (a thread per connection on select()), about 340
// such listens pushed the fds past FD_SETSIZE and every new connection of
// every tenant was refused. Every wait here is for a state, never a time.
//
//   cd test/e2e && npm ci && node --test listener.test.mjs

import { test, after } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { BIN, startHttp, waitFor } from "./http_helpers.mjs";

const STREAMS = 2000;
const CAP = 1500; // tenant A's max_listens
const META = {
  "io.modelcontextprotocol/protocolVersion": "2026-07-28",
  "io.modelcontextprotocol/clientCapabilities": {},
};
const TOKEN_A = "token-of-tenant-a-0123456789";
const TOKEN_B = "token-of-tenant-b-0123456789";
const sha = (t) => createHash("sha256").update(t).digest("hex");

let server, dir;
const open = [];
after(async () => {
  for (const r of open) r.destroy();
  if (server) await server.stop();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

const count = (pid, what) => fs.readdirSync(`/proc/${pid}/${what}`).length;
// what the fds are, for a failure's message: {"socket:[N]": 3, ...}
function fdKinds(pid) {
  const kinds = {};
  for (const f of fs.readdirSync(`/proc/${pid}/fd`)) {
    let k;
    try { k = fs.readlinkSync(`/proc/${pid}/fd/${f}`).replace(/\d+/g, "N"); } catch { k = "?"; }
    kinds[k] = (kinds[k] || 0) + 1;
  }
  return JSON.stringify(kinds);
}

// One POST on a connection of its own (agent: false). A listen resolves
// once its acknowledgement came, holding the response open ({status, res});
// anything else once its body ended ({status, body}).
function post(port, token, method, params, name) {
  const body = JSON.stringify({ jsonrpc: "2.0", id: 1, method, params: { ...params, _meta: META } });
  return new Promise((resolve, reject) => {
    const req = http.request({ host: "127.0.0.1", port, path: "/mcp", method: "POST", agent: false, headers: {
      "content-type": "application/json", accept: method === "subscriptions/listen" ? "text/event-stream" : "application/json",
      authorization: `Bearer ${token}`, "mcp-protocol-version": "2026-07-28", "mcp-method": method,
      ...(name ? { "mcp-name": name } : {}), "content-length": Buffer.byteLength(body) } }, (res) => {
      let data = "";
      res.setEncoding("utf8");
      if (res.statusCode === 200 && method === "subscriptions/listen") {
        res.on("data", (d) => {
          data += d;
          if (data.includes("notifications/subscriptions/acknowledged")) resolve({ status: 200, res: req });
        });
        res.on("end", () => reject(new Error(`the listen ended before its acknowledgement: ${data}`)));
        res.on("error", () => {});
        return;
      }
      res.on("data", (d) => { data += d; });
      res.on("end", () => resolve({ status: res.statusCode, body: data }));
    });
    req.on("error", (e) => (req.destroyed ? undefined : reject(e)));
    req.end(body);
  });
}

const read = (port, token) => post(port, token, "tools/call", { name: "read_file", arguments: { path: "notes.txt" } }, "read_file");
// a listen watching a file, as a client's would: its stream, its watch's fds
const listen = (port, token) => post(port, token, "subscriptions/listen",
  { notifications: { toolsListChanged: true, resourceSubscriptions: [`file://${path.join(dir, "ws", "notes.txt")}`] } });

test("2,000 listens of one tenant: capped at admission, the other tenant served, threads bounded, fds given back", { timeout: 60_000 }, async (t) => {
  dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "burrow-listener-")));
  fs.mkdirSync(path.join(dir, "ws"));
  fs.writeFileSync(path.join(dir, "ws", "notes.txt"), "alpha\n");
  fs.writeFileSync(path.join(dir, "tenant.yaml"), `roots: [${path.join(dir, "ws")}]\n`);
  fs.writeFileSync(path.join(dir, "burrow.yaml"), `roots: [${path.join(dir, "ws")}]
http:
  access_log: "off"
  workers: 1 # its workspaces open in the warm-up: the fds after it are the baseline
  max_connections: 8192
  max_connections_per_address: 8192
  max_unauthenticated: 4096
  tenants:
    a: {config: tenant.yaml, max_listens: ${CAP}, max_sessions: 10000, max_watches: 4096}
    b: {config: tenant.yaml}
  tokens:
    - {sha256: ${sha(TOKEN_A)}, tenant: a, max_sessions: 10000}
    - {sha256: ${sha(TOKEN_B)}, tenant: b}
`);
  // the server's RLIMIT_NOFILE: 65,536 (its hard limit if that is lower
  // and cannot be raised); what it got is checked below
  const sh = `ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"; exec "$0" "$@"`;
  server = await startHttp([], { listen: null, command: ["/bin/sh", "-c", sh, BIN, "mcp", "--config", path.join(dir, "burrow.yaml"), "--http", "127.0.0.1:0"] });
  const pid = server.proc.pid;
  const limit = Number(/Max open files\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/limits`, "utf8"))[1]);
  assert.ok(limit >= 3 * STREAMS + 1024, `the server may open enough fds: ${limit}`);

  // warm: each tenant served (every worker's workspaces open), a listen
  // opened and closed; then the baseline, once the server is quiet
  for (let i = 0; i < 4; i++) {
    const got = await Promise.all([read(server.port, TOKEN_A), read(server.port, TOKEN_B), listen(server.port, TOKEN_A)]);
    assert.equal(got[0].status, 200, got[0].body);
    got[2].res.destroy();
  }
  let baseline = -1;
  // settled: the same count across a probe of the closed listen (1 s)
  await waitFor(() => { const n = count(pid, "fd"); const quiet = n === baseline; baseline = n; return quiet; },
    "the server's fds settled", 30_000, 1500);

  // A's 2,000 listens, 200 at a time: the first CAP taken, the rest 429
  const results = [];
  for (let i = 0; i < STREAMS; i += 200) {
    const batch = await Promise.all(Array.from({ length: Math.min(200, STREAMS - i) }, () => listen(server.port, TOKEN_A)));
    for (const r of batch) {
      results.push(r);
      if (r.res) open.push(r.res);
    }
  }
  const ok = results.filter((r) => r.status === 200).length;
  const refused = results.filter((r) => r.status === 429);
  assert.equal(ok, CAP, "A's listens up to its cap are taken");
  assert.equal(refused.length, STREAMS - CAP, "the rest are refused");
  assert.match(JSON.parse(refused[0].body).error.message, /max_listens/, "the refusal names the cap");

  // B is served while A holds its streams; the threads do not grow with them
  const b = await read(server.port, TOKEN_B);
  assert.equal(b.status, 200, b.body);
  assert.match(JSON.parse(b.body).result.content[0].text, /alpha/);
  const threads = count(pid, "task");
  const held = count(pid, "fd");
  const rss = /VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"))[1];
  assert.ok(threads <= 32, `threads stay few with ${CAP} streams open: ${threads}`);
  assert.ok(count(pid, "fd") >= baseline + 2 * CAP, "each open stream holds its socket and its watch");

  // A closes them: the server finds each closed stream and gives its fds back
  for (const r of open.splice(0)) r.destroy();
  const closed = Date.now();
  await waitFor(() => count(pid, "fd") <= baseline, () => `the server's fds back to ${baseline}: ${fdKinds(pid)}`, 30_000);
  t.diagnostic(`${CAP} listens open: ${held} fds (baseline ${baseline}), ${threads} threads, ${Math.round(rss / 1024)} MiB resident; fds back ${Date.now() - closed} ms after they closed`);
  assert.ok(count(pid, "task") <= 32, "and its threads stay few");
  // A may listen again up to its cap
  const again = await listen(server.port, TOKEN_A);
  assert.equal(again.status, 200);
  again.res.destroy();
});

// A request on a connection of its own: resolves with the status once the
// head came ({status, req, body}); a 200 SSE answer stays open (req), any
// other answer is read to its end.
function raw(port, { method = "GET", headers = {}, body } = {}) {
  return new Promise((resolve) => {
    const req = http.request({ host: "127.0.0.1", port, path: "/mcp", method, agent: false, headers }, (res) => {
      const sse = (res.headers["content-type"] || "").startsWith("text/event-stream");
      if (res.statusCode === 200 && sse && method === "GET") return resolve({ status: 200, req, headers: res.headers });
      let data = "";
      res.setEncoding("utf8");
      res.on("data", (d) => { data += d; });
      res.on("end", () => resolve({ status: res.statusCode, headers: res.headers, body: data }));
      res.on("error", () => resolve({ status: res.statusCode, error: "reset" }));
    });
    req.on("error", (e) => resolve({ error: e.code || String(e) }));
    req.end(body);
  });
}

const initialize = (port) => raw(port, { method: "POST", body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize",
  params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "raw", version: "1" } } }),
headers: { "content-type": "application/json", accept: "application/json, text/event-stream" } });

test("http.max_streams caps a tenant's GET streams and listens together; http.max_connections closes the connection past it", { timeout: 60_000 }, async () => {
  const d = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "burrow-streams-")));
  const halfOpen = [];
  let s;
  try {
    fs.writeFileSync(path.join(d, "burrow.yaml"), `roots: [${d}]\nhttp: {access_log: "off", max_streams: 2, max_connections: 6}\n`);
    s = await startHttp(["--config", path.join(d, "burrow.yaml")]);
    const sessions = [];
    for (let i = 0; i < 3; i++) {
      const r = await initialize(s.port);
      assert.equal(r.status, 200, JSON.stringify(r));
      sessions.push(r.headers["mcp-session-id"]);
    }
    const get = (sid) => raw(s.port, { headers: { accept: "text/event-stream", "mcp-session-id": sid } });
    const g1 = await get(sessions[0]);
    assert.equal(g1.status, 200);
    const l = await post(s.port, "", "subscriptions/listen", { notifications: { toolsListChanged: true } }).catch((e) => ({ error: e }));
    assert.equal(l.status, 200, "a listen is the tenant's second stream");
    const g2 = await get(sessions[1]);
    assert.equal(g2.status, 429, "the third stream is refused");
    assert.match(JSON.parse(g2.body).error.message, /max_streams/);
    l.res.destroy(); // the listen's slot is free once the server sees it closed
    const g3 = await waitFor(async () => { const r = await get(sessions[1]); return r.status === 200 && r; }, "a stream taken again");
    g1.req.destroy();
    g3.req.destroy();

    // six open connections in all: a seventh is closed at once, until they go
    for (let i = 0; i < 6; i++) {
      halfOpen.push(await new Promise((resolve) => {
        const c = net.connect({ host: "127.0.0.1", port: s.port }, () => resolve(c));
        c.on("error", () => resolve(c));
      }));
    }
    await waitFor(async () => (await initialize(s.port)).error, "the connection past http.max_connections closed");
    for (const c of halfOpen.splice(0)) c.destroy();
    await waitFor(async () => (await initialize(s.port)).status === 200, "a connection served once they closed");
  } finally {
    for (const c of halfOpen) c.destroy();
    if (s) await s.stop();
    fs.rmSync(d, { recursive: true, force: true });
  }
});
