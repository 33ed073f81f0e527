// Issue 43: /healthz and /readyz on the MCP listener, and a graceful
// shutdown. The probes need no token (tokens are configured here) and say
// the state only; /readyz turns 503 at SIGTERM while a call is still in
// flight, that call is let finish, a new request meanwhile is 503 with
// Retry-After; a shutdown with 50 sessions' streams open and a call that
// never ends is over within http.shutdown_grace plus 100 ms; HAProxy with
// deploy.md's check takes a draining instance out; with a Redis
// state store that stops, /readyz is 503 until it is back. Every wait here
// is for a state (an event, an answer, the process's exit), never a time.
//
//   cd test/e2e && npm ci && node --test probes.test.mjs     (needs redis-server and haproxy)

import { test, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { freePort, startHttp, waitFor } from "./http_helpers.mjs";
import { needHaproxy, needRedis, redisOn, startHaproxy } from "./redis_helpers.mjs";

// What a busy machine may add to the shutdown's own 100 ms bound before a
// test calls it a failure (see the first SIGTERM test): these assertions
// guard against a drain that ignores its deadline, the figures are printed
const SLACK = 400;
const T = { timeout: 120_000 };
const TOKEN = "token-of-the-probes-test-0123";
const sha = (t) => createHash("sha256").update(t).digest("hex");
const FIXTURES = path.resolve(path.dirname(new URL(import.meta.url).pathname), "fixtures");
const ASK_TOOL = path.join(FIXTURES, "ask_twice.lua");
const SPIN_TOOL = path.join(FIXTURES, "spin.lua"); // a call that never looks at its cancel flag
const dirs = [], procs = [];
after(async () => {
  for (const p of procs) if (p.exitCode === null && !p.signalCode) p.kill("SIGKILL");
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

function setup(http_yaml, top = "") {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "burrow-probes-")));
  dirs.push(dir);
  fs.mkdirSync(path.join(dir, "ws"));
  fs.writeFileSync(path.join(dir, "ws", "notes.txt"), "alpha\n");
  fs.writeFileSync(path.join(dir, "burrow.yaml"), `roots: [ws]\ntools: [read_file, write_file, ${ASK_TOOL}, ${SPIN_TOOL}]\n${top}http:\n  access_log: "off"\n${http_yaml}`);
  return dir;
}

async function serve(dir) {
  const s = await startHttp(["--config", path.join(dir, "burrow.yaml")]);
  procs.push(s.proc);
  s.exited = new Promise((r) => s.proc.on("exit", (code, sig) => r({ code, sig, at: performance.now() })));
  return s;
}

// One request on a connection of its own: {status, headers, body} once the
// body ended; an SSE answer's events are handed to onEvent as they come
// (a comment as {comment}), and the request is in `req` to close it.
function request(port, { method = "GET", path: p = "/mcp", headers = {}, body, onEvent, onHead, onSent } = {}) {
  return new Promise((resolve) => {
    const req = http.request({ host: "127.0.0.1", port, path: p, method, agent: false, headers }, (res) => {
      if (onHead) onHead(res, req);
      let data = "", buf = "";
      res.setEncoding("utf8");
      res.on("data", (d) => {
        data += d;
        if (!onEvent) return;
        buf += d;
        let i;
        while ((i = buf.indexOf("\n\n")) >= 0) {
          const block = buf.slice(0, i);
          buf = buf.slice(i + 2);
          if (block.startsWith(":")) { onEvent({ comment: block.slice(1).trim() }); continue; }
          const line = block.split("\n").find((l) => l.startsWith("data:"));
          const text = line ? line.slice(5).trim() : "";
          if (text) onEvent(JSON.parse(text));
        }
      });
      res.on("end", () => resolve({ status: res.statusCode, headers: res.headers, body: data }));
      res.on("error", () => resolve({ status: res.statusCode, headers: res.headers, body: data, error: "reset" }));
    });
    req.on("error", (e) => resolve({ error: e.code || String(e) }));
    if (onSent) req.on("finish", onSent);
    req.end(body);
  });
}

const MCP = { "content-type": "application/json", accept: "application/json, text/event-stream" };
const auth = (token) => (token ? { authorization: `Bearer ${token}` } : {});
const rpc = (id, method, params) => JSON.stringify({ jsonrpc: "2.0", id, method, params });

async function initialize(port, token, caps = {}) {
  const r = await request(port, { method: "POST", headers: { ...MCP, ...auth(token) },
    body: rpc(1, "initialize", { protocolVersion: "2025-11-25", capabilities: caps, clientInfo: { name: "probes", version: "1" } }) });
  assert.equal(r.status, 200, JSON.stringify(r));
  const sid = r.headers["mcp-session-id"];
  const n = await request(port, { method: "POST", headers: { ...MCP, ...auth(token), "mcp-session-id": sid },
    body: JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }) });
  assert.equal(n.status, 202);
  return sid;
}

// ask_twice in session sid: its POST stream stays open while the tool waits
// for the client's answers. Resolves once the first question came:
// {asked: the question's request, done: the POST's end, events}.
function askTwice(port, token, sid) {
  const events = [];
  let asked;
  const first = new Promise((r) => { asked = r; });
  const done = request(port, { method: "POST", headers: { ...MCP, ...auth(token), "mcp-session-id": sid },
    body: rpc(7, "tools/call", { name: "ask_twice", arguments: { topic: "t" } }),
    onEvent: (m) => { events.push(m); if (m.method === "elicitation/create") asked(m); } });
  return first.then((q) => ({ asked: q, done, events }));
}
const answer = (port, token, sid, id, content) => request(port, { method: "POST",
  headers: { ...MCP, ...auth(token), "mcp-session-id": sid },
  body: JSON.stringify({ jsonrpc: "2.0", id, result: { action: "accept", content } }) });

const probe = (port, which, headers = {}) => request(port, { path: `/${which}`, headers });

test("probes without a token; SIGTERM: not ready at once, a new request 503, the call in flight finishes", T, async () => {
  const dir = setup(`  shutdown_grace: 60s\n  tokens:\n    - {sha256: ${sha(TOKEN)}}\n`);
  const s = await serve(dir);
  // tokens are configured: /mcp without one is 401, the probes answer
  assert.equal((await request(s.port, { method: "POST", headers: MCP, body: rpc(1, "ping", {}) })).status, 401);
  const live = await probe(s.port, "healthz");
  assert.equal(live.status, 200);
  assert.equal(live.body, "ok\n");
  const ready = await waitFor(async () => { const r = await probe(s.port, "readyz"); return r.status === 200 && r; }, "/readyz 200 after start");
  assert.equal(ready.body, "ok\n", "the state only: no version, no tenant");
  assert.equal(ready.headers["content-type"], "text/plain");
  // only GET and HEAD; a HEAD has the status and no body
  assert.equal((await request(s.port, { method: "HEAD", path: "/readyz" })).status, 200);
  const post = await request(s.port, { method: "POST", path: "/healthz", headers: MCP, body: "{}" });
  assert.equal(post.status, 405);
  assert.equal(post.headers.allow, "GET, HEAD");
  // DNS rebinding: a foreign Host or Origin is refused here too
  assert.equal((await probe(s.port, "healthz", { host: "attacker.example" })).status, 403);
  assert.equal((await probe(s.port, "readyz", { origin: "https://attacker.example" })).status, 403);

  // a call in flight: the tool waits for the client's answer
  const sid = await initialize(s.port, TOKEN, { elicitation: {} });
  const call = await askTwice(s.port, TOKEN, sid);
  s.proc.kill("SIGTERM");
  const draining = await waitFor(async () => { const r = await probe(s.port, "readyz"); return r.status === 503 && r; },
    "/readyz 503 while the call is still running");
  assert.equal(draining.body, "not ready: draining\n");
  assert.equal((await probe(s.port, "healthz")).status, 200, "still live: it serves the call");
  // new requests: 503 with Retry-After, in a session and to make one
  const late = await request(s.port, { method: "POST", headers: { ...MCP, ...auth(TOKEN), "mcp-session-id": sid },
    body: rpc(8, "tools/call", { name: "read_file", arguments: { path: "notes.txt" } }) });
  assert.equal(late.status, 503, JSON.stringify(late));
  assert.ok(Number(late.headers["retry-after"]) >= 1);
  assert.match(JSON.parse(late.body).error.message, /shutting down/);
  assert.equal((await request(s.port, { method: "POST", headers: { ...MCP, ...auth(TOKEN) },
    body: rpc(1, "initialize", { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "x", version: "1" } }) })).status, 503);
  // the call goes on: its answers (responses, not requests) are taken
  assert.equal(s.proc.exitCode, null, "the process waits for the call");
  assert.equal((await answer(s.port, TOKEN, sid, call.asked.id, { name: "Ada" })).status, 202);
  const second = await waitFor(() => call.events.find((m) => m.method === "elicitation/create" && m.id !== call.asked.id),
    "the tool's second question");
  assert.equal((await answer(s.port, TOKEN, sid, second.id, { colour: "blue" })).status, 202);
  const end = await call.done;
  const result = call.events.find((m) => m.id === 7);
  assert.equal(result?.result?.content?.[0]?.text, "Ada likes blue", JSON.stringify(end));
  const { code } = await s.exited;
  assert.equal(code, 0);
  assert.match(s.stderr(), /SIGTERM: stopped \d+ ms after it: 0 calls still running/);
});

// A listen (MCP 2026-07-28) on a connection of its own, resolved once it
// is acknowledged; its events (and its end) are collected.
function listen(port) {
  const events = [];
  let acked;
  const ack = new Promise((r) => { acked = r; });
  const done = request(port, { method: "POST", headers: { "content-type": "application/json", accept: "text/event-stream",
    "mcp-protocol-version": "2026-07-28", "mcp-method": "subscriptions/listen" },
  body: rpc(1, "subscriptions/listen", { notifications: { toolsListChanged: true },
    _meta: { "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {} } }),
  onEvent: (m) => { events.push(m); if (m.method === "notifications/subscriptions/acknowledged") acked(); } });
  return ack.then(() => ({ events, done }));
}

// A session's GET stream, resolved once its first (priming) event came.
function getStream(port, sid) {
  const events = [];
  let primed;
  const ready = new Promise((r) => { primed = r; });
  const done = request(port, { headers: { accept: "text/event-stream", "mcp-session-id": sid },
    onHead: () => primed(), onEvent: (m) => events.push(m) });
  return ready.then(() => ({ events, done }));
}

test("SIGTERM with 50 streams open and a call that never ends: gone within shutdown_grace + 100 ms, streams ended cleanly, what was cut said", T, async () => {
  const GRACE = 2000;
  const dir = setup(`  shutdown_grace: ${GRACE}ms\n`);
  const s = await serve(dir);
  await waitFor(async () => (await probe(s.port, "readyz")).status === 200, "/readyz 200");
  const gets = [], listens = [];
  for (let i = 0; i < 25; i++) gets.push(await getStream(s.port, await initialize(s.port, null)));
  for (let i = 0; i < 25; i++) listens.push(await listen(s.port));
  // a call that waits for an answer that never comes: cut at the deadline
  const sid = await initialize(s.port, null, { elicitation: {} });
  const call = await askTwice(s.port, null, sid);

  const t0 = performance.now();
  s.proc.kill("SIGTERM");
  const { code, at } = await s.exited;
  const elapsed = at - t0;
  assert.equal(code, 0, s.stderr());
  const m = /SIGTERM: stopped (\d+) ms after it: (\d+) calls? still running at the end, cancelled; (\d+) streams? open/.exec(s.stderr());
  assert.ok(m, s.stderr());
  const own = Number(m[1]);
  console.log(`# grace ${GRACE} ms: stopped ${own} ms after the signal by its own clock; exit seen ${Math.round(elapsed)} ms after kill()`);
  assert.equal(Number(m[2]), 1, "the call waiting for its answer was cut");
  assert.equal(Number(m[3]), 50, "25 GET streams and 25 listens were open");
  // the call was given its grace, and then the process went: its design
  // bound is 100 ms past the grace by its own monotonic clock (from the
  // signal read to the workers joined; measured 3-10 ms here, printed
  // above). CI machines are busy and a descheduled thread is no fault of
  // the drain, so the assertion is a guard against a drain that ignores
  // its deadline (the old stop waited 1.18 s; a hang waits forever), not a
  // timing benchmark: SLACK on top of the 100 ms
  assert.ok(own >= GRACE, `the call in flight had its ${GRACE} ms: ${own}`);
  assert.ok(own <= GRACE + 100 + SLACK, `stopped ${own} ms after the signal: over ${GRACE} + 100 + ${SLACK}`);
  // seen from here the exit also holds the signal's delivery, the process's
  // own teardown (lua_close, exit) and node noticing the child's end
  // (SIGCHLD through libuv): on a 2-core machine shared with other builds
  // those add scheduling delays of their own, so 250 ms of slack, and
  // only on this outer figure
  assert.ok(elapsed <= GRACE + 100 + SLACK + 250, `exit seen ${Math.round(elapsed)} ms after kill()`);
  // each stream ended cleanly: GET streams after a last comment, listens
  // after their response (resultType complete)
  for (const g of gets) {
    const r = await g.done;
    assert.equal(r.error, undefined, JSON.stringify(r));
    assert.ok(g.events.some((e) => e.comment === "the server is shutting down"), JSON.stringify(g.events));
  }
  for (const l of listens) {
    const r = await l.done;
    assert.equal(r.error, undefined, JSON.stringify(r));
    assert.ok(l.events.some((e) => e.id === 1 && e.result?.resultType === "complete"), JSON.stringify(l.events));
  }
  await call.done;
});

test("SIGTERM with a call that never looks at its cancel flag: left to the exit, gone within shutdown_grace + 100 ms", T, async () => {
  const GRACE = 500;
  const dir = setup(`  shutdown_grace: ${GRACE}ms\n`);
  const s = await serve(dir);
  const sid = await initialize(s.port, null);
  const mark = path.join(dir, "spinning");
  const call = request(s.port, { method: "POST", headers: { ...MCP, "mcp-session-id": sid },
    body: rpc(5, "tools/call", { name: "spin", arguments: { mark } }) });
  await waitFor(() => fs.existsSync(mark), "the call running");
  const t0 = performance.now();
  s.proc.kill("SIGTERM");
  const { code, at } = await s.exited;
  assert.equal(code, 0, s.stderr());
  const m = /stopped (\d+) ms after it: 1 call still running at the end, cancelled \(a worker still busy is left to the process's exit\)/.exec(s.stderr());
  assert.ok(m, s.stderr());
  console.log(`# a call that ignores its cancel, grace ${GRACE} ms: stopped ${m[1]} ms after the signal; exit seen ${Math.round(at - t0)} ms after kill()`);
  assert.ok(Number(m[1]) <= GRACE + 100 + SLACK, s.stderr());
  // the outer figure: as in the test above, 250 ms of slack for the
  // signal's delivery and node's view of the exit on a busy machine
  assert.ok(at - t0 <= GRACE + 100 + SLACK + 250, `exit seen ${Math.round(at - t0)} ms after kill()`);
  await call;
});

test("SIGTERM idle with streams open: gone at once, not at the deadline", T, async () => {
  const dir = setup("  shutdown_grace: 60s\n");
  const s = await serve(dir);
  await waitFor(async () => (await probe(s.port, "readyz")).status === 200, "/readyz 200");
  const gets = [];
  for (let i = 0; i < 10; i++) gets.push(await getStream(s.port, await initialize(s.port, null)));
  const t0 = performance.now();
  s.proc.kill("SIGTERM");
  const { code, at } = await s.exited;
  assert.equal(code, 0);
  const own = Number(/stopped (\d+) ms after it: 0 calls/.exec(s.stderr())?.[1]);
  console.log(`# idle, grace 60 s: stopped ${own} ms after the signal; exit seen ${Math.round(at - t0)} ms after kill()`);
  // nothing to wait for: far below the 60 s grace (the streams' readers
  // get a second at most to write their end)
  assert.ok(own < 60_000 && at - t0 < 60_000, s.stderr());
  for (const g of gets) await g.done;
});

test("SIGTERM with the access log stuck (a pipe nobody reads): still gone within shutdown_grace + 100 ms", T, async () => {
  const GRACE = 300;
  const dir = setup(`  shutdown_grace: ${GRACE}ms\n`);
  const fifo = path.join(dir, "access.fifo");
  execFileSync("mkfifo", [fifo]);
  const rd = fs.openSync(fifo, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK); // a reader that never reads
  try {
    fs.writeFileSync(path.join(dir, "burrow.yaml"), fs.readFileSync(path.join(dir, "burrow.yaml"), "utf8")
      .replace('access_log: "off"', "access_log: access.fifo"));
    const s = await serve(dir);
    // far more refusals than the pipe holds (64 KiB): the log's writer is stuck
    for (let i = 0; i < 1500; i += 100) {
      await Promise.all(Array.from({ length: 100 }, () => request(s.port, { path: "/nope" })));
    }
    s.proc.kill("SIGTERM");
    const { code } = await s.exited;
    assert.equal(code, 0);
    const own = Number(/stopped (\d+) ms after it/.exec(s.stderr())?.[1]);
    console.log(`# access log stuck, grace ${GRACE} ms: stopped ${own} ms after the signal`);
    assert.ok(own <= GRACE + 100 + SLACK, `stopped ${own} ms after the signal: over ${GRACE} + 100 + ${SLACK} (${s.stderr()})`);
  } finally {
    fs.closeSync(rd);
  }
});

test("a write cut by the deadline leaves the old file or the new one whole, never a part", T, async () => {
  // write_file writes a new inode (O_TMPFILE) and puts it in the name's
  // place only once complete: cut anywhere, the name holds one whole file
  const BIG = 24 << 20;
  const dir = setup("  shutdown_grace: 100ms\n  max_body: 64MiB\n", "caps: {max_file_size: 64MiB}\n");
  const old = "old contents\n";
  let cut = 0, midWrite = 0;
  for (let round = 0; round < 3; round++) {
    fs.writeFileSync(path.join(dir, "ws", "big.txt"), old);
    const s = await serve(dir);
    const sid = await initialize(s.port, null);
    const content = String(round).repeat(BIG);
    // the signal once the write has begun: the server holds its unnamed
    // new inode open (O_TMPFILE: "ws/#N (deleted)" among its fds). Looked
    // for without a pause (the write is short on a fast disk); a round
    // whose write was over before it was seen says so and signals anyway
    const wrote = request(s.port, { method: "POST", headers: { ...MCP, "mcp-session-id": sid },
      body: rpc(9, "tools/call", { name: "write_file", arguments: { path: "big.txt", content } }) });
    const fdDir = `/proc/${s.proc.pid}/fd`;
    const writing = () => fs.readdirSync(fdDir).some((f) => {
      try { return /\/ws\/.*\(deleted\)$/.test(fs.readlinkSync(`${fdDir}/${f}`)); } catch { return false; }
    });
    let seen = false;
    for (const until = Date.now() + 20_000; !seen && Date.now() < until;) {
      seen = writing();
      if (!seen) await new Promise((r) => setImmediate(r));
      if (!seen && fs.readFileSync(path.join(dir, "ws", "big.txt"), "utf8").length !== old.length) break; // over already
    }
    s.proc.kill("SIGTERM");
    if (seen) midWrite++;
    await s.exited;
    await wrote;
    const m = /(\d+) calls? still running/.exec(s.stderr());
    if (m && Number(m[1]) > 0) cut++;
    const now = fs.readFileSync(path.join(dir, "ws", "big.txt"), "utf8");
    assert.ok(now === old || now === content, `big.txt is ${now.length} bytes: neither the old file nor the new one`);
    // cut between its link under a temporary name and the exchange, a
    // write may leave that name (as after kill -9: docs/security.md#writes;
    // swept by the next process that writes here); nothing else
    const others = fs.readdirSync(path.join(dir, "ws")).filter((f) => f !== "big.txt" && f !== "notes.txt");
    assert.ok(others.every((f) => /^\.burrow\.\d+\..*\.tmp$/.test(f)), `left in the folder: ${others}`);
  }
  console.log(`# signalled mid-write: ${midWrite} of 3; calls cut at the deadline: ${cut} of 3`);
  assert.ok(midWrite > 0, "no round had its signal while the write ran: the case was not tried");
});

test("HAProxy with the deploy.md check on /readyz: an instance draining is taken out, its call still finishes", T, async () => {
  needHaproxy();
  const dir = setup("  shutdown_grace: 60s\n");
  const a = await serve(dir), b = await serve(dir);
  const port = await freePort();
  // docs/deploy.md's check lines, probed every 100 ms here
  const hap = await startHaproxy(dir, port, `defaults
  mode http
  timeout connect 5s
  timeout client 1m
  timeout server 1m
frontend mcp
  bind 127.0.0.1:${port}
  default_backend burrow
backend burrow
  balance roundrobin
  option httpchk
  http-check send meth GET uri /readyz hdr Host 127.0.0.1
  http-response set-header X-Served-By %[srv_name]
  server a 127.0.0.1:${a.port} check inter 100ms fall 1 rise 1
  server b 127.0.0.1:${b.port} check inter 100ms fall 1 rise 1
`);
  procs.push(hap);
  try {
    // a stateless read through the proxy: who served it
    const read = async () => {
      const r = await request(port, { method: "POST", headers: { ...MCP, "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/call", "mcp-name": "read_file" },
      body: rpc(3, "tools/call", { name: "read_file", arguments: { path: "notes.txt" },
        _meta: { "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {} } }) });
      return { status: r.status, who: r.headers?.["x-served-by"] };
    };
    const both = new Set();
    await waitFor(async () => { const r = await read(); if (r.status === 200) both.add(r.who); return both.size === 2; },
      "both instances served through the proxy");
    // a call in flight on a, then SIGTERM: a drains, the proxy sees /readyz 503
    const sid = await initialize(a.port, null, { elicitation: {} });
    const call = await askTwice(a.port, null, sid);
    a.proc.kill("SIGTERM");
    await waitFor(async () => (await probe(a.port, "readyz")).status === 503, "a draining");
    // once the proxy has seen it, every request goes to b, and is answered
    let run = 0;
    await waitFor(async () => { const r = await read(); run = r.status === 200 && r.who === "b" ? run + 1 : 0; return run >= 20; },
      "20 requests in a row served by b");
    // a's call still finishes
    assert.equal((await answer(a.port, null, sid, call.asked.id, { name: "Ada" })).status, 202);
    const second = await waitFor(() => call.events.find((m) => m.method === "elicitation/create" && m.id !== call.asked.id),
      "the second question");
    assert.equal((await answer(a.port, null, sid, second.id, { colour: "blue" })).status, 202);
    await call.done;
    assert.equal(call.events.find((m) => m.id === 7)?.result?.content?.[0]?.text, "Ada likes blue");
    assert.equal((await a.exited).code, 0);
  } finally {
    hap.kill("SIGTERM");
    await b.stop();
  }
});

test("with a Redis state store: /readyz 503 while Redis is down, 200 again once it is back", T, async () => {
  needRedis();
  const rdir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "burrow-probes-redis-")));
  dirs.push(rdir);
  const redis = redisOn(rdir, await freePort()), rport = redis.port;
  await redis.start();
  procs.push(redis.proc);
  const dir = setup("  shutdown_grace: 5s\n", `state: {url: "redis://127.0.0.1:${rport}/0", timeout: 2s}\n`);
  const s = await serve(dir);
  await waitFor(async () => (await probe(s.port, "readyz")).status === 200, "/readyz 200 with Redis up");
  await redis.stop();
  const down = await waitFor(async () => { const r = await probe(s.port, "readyz"); return r.status === 503 && r; },
    "/readyz 503 with Redis down");
  assert.equal(down.body, "not ready: state store unreachable\n");
  assert.equal((await probe(s.port, "healthz")).status, 200, "live all the same");
  await redis.start();
  procs.push(redis.proc);
  await waitFor(async () => (await probe(s.port, "readyz")).status === 200, "/readyz 200 once Redis is back");
  await s.stop();
  await redis.stop();
});
