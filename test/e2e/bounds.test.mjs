// Issue 26: the bytes waiting for the HTTP workers are bounded, per session
// (http.max_session_queued) and in all (http.max_queued). One worker is
// held by a call waiting for its client's approval; meanwhile other
// sessions post 1 MiB notifications: past a session's bound its next POST
// is 429 naming the key, past the process's bound every session's is; once
// the call is answered the queue drains and the sessions are served again.
// At b663a06 every body was taken (202) and kept: 97 x 4 MiB took 442 MB.
//
//   cd test/e2e && npm ci && node --test bounds.test.mjs

import { test, after } from "node:test";
import assert from "node:assert/strict";
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { startHttp, initBody, HEADERS, sseEvents, waitFor } from "./http_helpers.mjs";

const MiB = 1024 * 1024;
let server, dir;
after(async () => {
  if (server) await server.stop();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

async function rawSession(url, token) {
  const auth = token ? { authorization: `Bearer ${token}` } : {};
  const r = await fetch(url, { method: "POST", headers: { ...HEADERS, ...auth }, body: initBody(1) });
  const sid = r.headers.get("mcp-session-id");
  await r.text();
  const h = { ...HEADERS, ...auth, "mcp-session-id": sid, "mcp-protocol-version": "2025-11-25" };
  const post = async (o) => {
    const res = await fetch(url, { method: "POST", headers: h, body: JSON.stringify(o) });
    return { status: res.status, text: await res.text() };
  };
  assert.equal((await post({ jsonrpc: "2.0", method: "notifications/initialized" })).status, 202);
  return post;
}

const big = (i) => ({ jsonrpc: "2.0", method: "notifications/burrow_test_padding", params: { i, pad: "x".repeat(MiB) } });

test("queued bodies are bounded per session and in all; the queue drains once the worker is free", { timeout: 120_000 }, async () => {
  dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "burrow-bounds-")));
  fs.mkdirSync(path.join(dir, "ws"));
  fs.writeFileSync(path.join(dir, "ask.lua"), `return { name = "ask", check = function(r)
    if r.operation == "write" and not r.member then return "ask", "hold" end return "allow" end }\n`);
  fs.writeFileSync(path.join(dir, "burrow.yaml"),
    "roots: [ws]\npolicies: [./ask.lua]\nhttp: {workers: 1, max_body: 2MiB, max_session_queued: 3MiB, max_queued: 4MiB}\n");
  server = await startHttp(["--config", path.join(dir, "burrow.yaml")]);

  // B and C first: their initialize needs the worker, which A then holds
  const b = await rawSession(server.url);
  const c = await rawSession(server.url);
  // A's call waits for its approval: the one worker is held
  let release, asked;
  const askedP = new Promise((r) => { asked = r; });
  const held = new Promise((r) => { release = r; });
  const a = new Client({ name: "holder", version: "1" }, { capabilities: { elicitation: {} } });
  a.setRequestHandler(ElicitRequestSchema, async () => { asked(); await held; return { action: "accept", content: { approve: true } }; });
  await a.connect(new StreamableHTTPClientTransport(new URL(server.url)));
  const call = a.callTool({ name: "write_file", arguments: { path: "w.txt", content: "w\n" } });
  await askedP;

  assert.equal((await b(big(1))).status, 202);
  assert.equal((await b(big(2))).status, 202);
  const b3 = await b(big(3)); // 3 MiB and more for B alone
  assert.equal(b3.status, 429, b3.text);
  assert.match(b3.text, /max_session_queued/);
  assert.equal((await c(big(1))).status, 202);
  const c3 = await c(big(2)); // B's 2 + C's 2 MiB > 4 MiB in all; C's own 2 MiB fit its 3
  assert.equal(c3.status, 429, c3.text);
  assert.match(c3.text, /max_queued/);
  const small = await c({ jsonrpc: "2.0", method: "notifications/burrow_test_padding", params: {} });
  assert.equal(small.status, 202, "a small message still fits");

  release();
  const res = await call;
  assert.equal(res.isError, undefined, JSON.stringify(res));
  // drained: B is served again (a request answered by its worker)
  await waitFor(async () => (await b(big(4))).status === 202, "B's messages taken again once the worker is free", 30_000, 100);
  const pong = await b({ jsonrpc: "2.0", id: 9, method: "tools/list" });
  assert.equal(pong.status, 200);
  await a.close();
});

// One tenant cannot fill the queue every tenant shares: its sessions'
// waiting bodies together are bounded (http.max_tenant_queued, by default
// half of http.max_queued when there are tenants). Tenant A's call holds
// its one running slot (2 workers, 2 tenants: one each) on an approval;
// A's other sessions post 1 MiB notifications, which wait: past 4 MiB for
// A in all, A's next POST is 429 naming the key, while tenant B's posts
// and calls are taken and answered; once A's call is answered A drains.
test("queued bodies are bounded per tenant; another tenant is served meanwhile", { timeout: 120_000 }, async () => {
  const sha = (t) => crypto.createHash("sha256").update(t).digest("hex");
  const d = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "burrow-bounds-tenant-")));
  fs.mkdirSync(path.join(d, "ws"));
  fs.mkdirSync(path.join(d, "other"));
  fs.writeFileSync(path.join(d, "other/o.txt"), "other\n");
  fs.writeFileSync(path.join(d, "ask.lua"), `return { name = "ask", check = function(r)
    if r.operation == "write" and not r.member then return "ask", "hold" end return "allow" end }\n`);
  fs.writeFileSync(path.join(d, "other.yaml"), "roots: [other]\n");
  fs.writeFileSync(path.join(d, "burrow.yaml"), [
    "roots: [ws]",
    "policies: [./ask.lua]",
    "http:",
    "  workers: 2",
    "  max_body: 2MiB",
    "  max_session_queued: 3MiB",
    "  max_tenant_queued: 4MiB",
    "  max_queued: 64MiB",
    "  tenants:",
    "    b: {config: other.yaml}",
    "  tokens:",
    `    - {sha256: ${sha("tok-a")}}`,
    `    - {sha256: ${sha("tok-b")}, tenant: b}`,
    "",
  ].join("\n"));
  const s = await startHttp(["--config", path.join(d, "burrow.yaml")]);
  try {
    const a2 = await rawSession(s.url, "tok-a");
    const a3 = await rawSession(s.url, "tok-a");
    const b1 = await rawSession(s.url, "tok-b");
    let release, asked;
    const askedP = new Promise((r) => { asked = r; });
    const held = new Promise((r) => { release = r; });
    const a = new Client({ name: "holder", version: "1" }, { capabilities: { elicitation: {} } });
    a.setRequestHandler(ElicitRequestSchema, async () => { asked(); await held; return { action: "accept", content: { approve: true } }; });
    await a.connect(new StreamableHTTPClientTransport(new URL(s.url),
      { requestInit: { headers: { authorization: "Bearer tok-a" } } }));
    const call = a.callTool({ name: "write_file", arguments: { path: "w.txt", content: "w\n" } });
    await askedP;

    assert.equal((await a2(big(1))).status, 202);
    assert.equal((await a2(big(2))).status, 202);
    assert.equal((await a3(big(1))).status, 202);
    const a4 = await a3(big(2)); // A's 4 bodies pass 4 MiB; a3's own 2 would fit its 3
    assert.equal(a4.status, 429, a4.text);
    assert.match(a4.text, /max_tenant_queued/);
    // B is taken and served meanwhile: 6 MiB in all, more than A may have
    // waiting, each body handled (the tools/list after it is answered by
    // B's worker, in order) before the next is sent
    for (let i = 1; i <= 6; i++) {
      assert.equal((await b1(big(i))).status, 202, `B's body ${i}`);
      const listed = await b1({ jsonrpc: "2.0", id: 100 + i, method: "tools/list" });
      assert.equal(listed.status, 200, listed.text);
    }

    release();
    assert.equal((await call).isError, undefined);
    await waitFor(async () => (await a3(big(9))).status === 202, "A's messages taken again once its call is done", 30_000, 100);
    await a.close();
  } finally {
    await s.stop();
    fs.rmSync(d, { recursive: true, force: true });
  }
});

// The server's requests a client leaves unanswered are bounded: a client
// that offers roots, never answers roots/list and says its roots changed
// again and again cannot grow the table of requests waiting for it (at
// most 64; the next one is not sent and stderr says so). Before, every
// notifications/roots/list_changed added one for as long as the session lived.
test("requests of ours a client never answers are bounded", { timeout: 60_000 }, async () => {
  const d = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "burrow-bounds-roots-")));
  fs.mkdirSync(path.join(d, "ws"));
  const s = await startHttp(["--root", path.join(d, "ws")]);
  try {
    const init = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize",
      params: { protocolVersion: "2025-11-25", capabilities: { roots: { listChanged: true } }, clientInfo: { name: "mute", version: "1" } } });
    const r = await fetch(s.url, { method: "POST", headers: HEADERS, body: init });
    const sid = r.headers.get("mcp-session-id");
    await r.text();
    const h = { ...HEADERS, "mcp-session-id": sid, "mcp-protocol-version": "2025-11-25" };
    const note = (method) => fetch(s.url, { method: "POST", headers: h, body: JSON.stringify({ jsonrpc: "2.0", method }) }).then((x) => x.text());
    await note("notifications/initialized");
    for (let i = 0; i < 70; i++) await note("notifications/roots/list_changed");
    // a state: the worker has handled them all once a request after them is answered
    const pong = await fetch(s.url, { method: "POST", headers: h, body: JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/list" }) });
    assert.equal(pong.status, 200);
    await pong.text();
    // stderr is another pipe than the answer's: its line may be read after it
    await waitFor(() => /roots\/list not sent: the client has not answered 64 requests of ours/.test(s.stderr()),
      () => `the refusal's log line in ${JSON.stringify(s.stderr())}`);
  } finally {
    await s.stop();
    fs.rmSync(d, { recursive: true, force: true });
  }
});

// The answers kept for resumption (Last-Event-ID) are bounded in bytes per
// tenant (http.max_kept_bytes), all its sessions together: past it the
// oldest finished streams nobody reads go (a resume of one is 404, as for
// any stream no longer kept), the newest stay. Before, each session kept
// 16 finished answers whatever their size (40 sessions of 4 MiB reads held
// 156 MB).
test("kept answers are bounded in bytes per tenant; the oldest finished go first", { timeout: 60_000 }, async () => {
  const d = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "burrow-bounds-kept-")));
  fs.mkdirSync(path.join(d, "ws"));
  fs.writeFileSync(path.join(d, "ws/big.txt"), ("k".repeat(99) + "\n").repeat(400)); // 40,000 bytes
  fs.writeFileSync(path.join(d, "burrow.yaml"), "roots: [ws]\nhttp: {max_kept_bytes: 100KB}\n");
  const s = await startHttp(["--config", path.join(d, "burrow.yaml")]);
  try {
    const sids = [];
    const read = async (sid, id) => {
      const h = { ...HEADERS, accept: "text/event-stream, application/json", "mcp-session-id": sid, "mcp-protocol-version": "2025-11-25" };
      const r = await fetch(s.url, { method: "POST", headers: h, body: JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call",
        params: { name: "read_file", arguments: { path: "big.txt" } } }) });
      let last;
      for await (const ev of sseEvents(r.body)) if (ev.data) last = ev;
      assert.ok(last && last.data.length > 40_000, "the answer came whole");
      return last.id;
    };
    const resume = async (sid, id) => {
      const r = await fetch(s.url, { headers: { accept: "text/event-stream", "mcp-session-id": sid,
        "mcp-protocol-version": "2025-11-25", "last-event-id": id.replace(/-\d+$/, "-0") } });
      await r.body.cancel();
      return r.status;
    };
    for (let i = 0; i < 2; i++) {
      const r = await fetch(s.url, { method: "POST", headers: HEADERS, body: initBody(1) });
      await r.text();
      sids.push(r.headers.get("mcp-session-id"));
    }
    const first = await read(sids[0], 2);  // session A: 40 KB kept
    const second = await read(sids[1], 2); // session B: 80 KB kept in all
    assert.equal(await resume(sids[0], first), 200, "A's answer is kept while the tenant is under its bound");
    const third = await read(sids[1], 3);  // 120 KB > 100 KB: the oldest finished goes (B's own first, then A's)
    assert.equal(await resume(sids[1], third), 200, "the newest answer is kept");
    const kept = [await resume(sids[0], first), await resume(sids[1], second)];
    assert.ok(kept.includes(404), `one older answer went: ${kept}`);
    assert.deepEqual(kept.filter((x) => x === 200).length, 1, `and only one: ${kept}`);
  } finally {
    await s.stop();
    fs.rmSync(d, { recursive: true, force: true });
  }
});
