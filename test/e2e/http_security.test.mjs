// The listener of `burrow mcp --http` under attack: DNS rebinding (Host,
// Origin), missing and wrong bearer tokens, one tenant reaching for
// another's files, a session id used with another token, a non-loopback
// bind without tokens, oversized bodies, too many calls, and 1,000
// abandoned sessions reaped. Real binary, real files; the SDK client where a
// client would use it, raw fetch for what it would never send.
//
//   cd test/e2e && node --test http_security.test.mjs
//   BURROW_RESOLVER=walk node --test http_security.test.mjs

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import net from "node:net";
import path from "node:path";
import { createHash } from "node:crypto";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { startHttp, runToEnd, initBody, sseEvents, rawRequest, HEADERS, waitFor } from "./http_helpers.mjs";

const T = { timeout: 120_000 };
const sha = (t) => createHash("sha256").update(t).digest("hex");
const TOK_A = "alice-token-0123456789", TOK_B = "bob-token-9876543210", TOK_SMALL = "small-limits-token";
let TMP, A, B, srv;

function write(file, text) {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, text);
}

before(async () => {
  TMP = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "burrow-httpsec-")));
  A = path.join(TMP, "alice");
  B = path.join(TMP, "bob");
  write(path.join(A, "notes.txt"), "alice notes\n");
  write(path.join(B, "secret-b.txt"), "bravo secret\n");
  write(path.join(B, "sub", "deep.txt"), "bravo deep\n");
  fs.symlinkSync(path.join(B, "secret-b.txt"), path.join(A, "link-to-b"));
  fs.symlinkSync(B, path.join(A, "dirlink-to-b"));
  fs.mkdirSync(path.join(TMP, "main"));
  // both tenants see their folder as /workspace: the same agent path, two
  // different places
  write(path.join(TMP, "alice.yaml"), "roots:\n  - {path: alice, mount: /workspace}\n");
  write(path.join(TMP, "bob.yaml"), "roots:\n  - {path: bob, mount: /workspace}\n");
  write(path.join(TMP, "server.yaml"), `roots:
  - {path: main, mount: /workspace}
http:
  tenants:
    alice: {config: alice.yaml}
    bob: {config: bob.yaml}
  tokens:
    - {sha256: ${sha(TOK_A)}, tenant: alice}
    - {sha256: ${sha(TOK_B)}, tenant: bob}
    - {sha256: ${sha(TOK_SMALL)}, tenant: alice, max_body: 2KiB, max_calls: 1, max_sessions: 3}
`);
  srv = await startHttp(["--config", path.join(TMP, "server.yaml")]);
});

after(async () => {
  if (srv) await srv.stop();
  if (TMP) fs.rmSync(TMP, { recursive: true, force: true });
});

async function connect(token) {
  const client = new Client({ name: "sec", version: "1" });
  const transport = new StreamableHTTPClientTransport(new URL(srv.url),
    { requestInit: { headers: { authorization: `Bearer ${token}` } } });
  await client.connect(transport);
  return { client, transport };
}

// A session made by a raw initialize, whose answer is read: the call it
// was is over when this returns (a token's max_calls counts it until then).
async function rawSession(token) {
  const r = await fetch(srv.url, { method: "POST", headers: { ...HEADERS, authorization: `Bearer ${token}` }, body: initBody() });
  assert.equal(r.status, 200);
  assert.match(await r.text(), /"protocolVersion"/);
  return r.headers.get("mcp-session-id");
}

const text = (res) => res.content.map((c) => c.text).join("\n");

test("wrong Origin or Host: 403, with a JSON-RPC error body; right ones pass", T, async () => {
  for (const extra of [{ origin: "http://evil.example.com" }, { host: "evil.example.com" },
    { origin: "null" }, { origin: `http://localhost.evil.example.com:${srv.port}` }]) {
    const r = await rawRequest(srv.url, { headers: { ...HEADERS, authorization: `Bearer ${TOK_A}`, ...extra }, body: initBody() });
    assert.equal(r.status, 403, JSON.stringify(extra));
    const body = JSON.parse(r.body);
    assert.equal(body.jsonrpc, "2.0");
    assert.equal(typeof body.error.code, "number");
  }
  const ok = await fetch(srv.url, { method: "POST", headers: { ...HEADERS, authorization: `Bearer ${TOK_A}`,
    origin: `http://localhost:${srv.port}` }, body: initBody() });
  assert.equal(ok.status, 200);
  await ok.body.cancel();
});

test("no token or a bad token: 401, and nothing runs", T, async () => {
  const sid = await rawSession(TOK_A);
  const call = (n) => JSON.stringify({ jsonrpc: "2.0", id: n, method: "tools/call",
    params: { name: "write_file", arguments: { path: `pwned${n}.txt`, content: "x" } } });
  const tries = [{}, { authorization: "Bearer wrong" }, { authorization: `Basic ${TOK_A}` },
    { authorization: `Bearer ${TOK_A}x` }, { authorization: "Bearer " }];
  let n = 0;
  for (const auth of tries) {
    const r = await fetch(srv.url, { method: "POST", headers: { ...HEADERS, "mcp-session-id": sid, ...auth }, body: call(++n) });
    assert.equal(r.status, 401, JSON.stringify(auth));
    assert.match(r.headers.get("www-authenticate"), /^Bearer/);
    assert.equal((await r.json()).error.code, -32000);
  }
  // GET and DELETE too
  for (const method of ["GET", "DELETE"]) {
    const r = await fetch(srv.url, { method, headers: { accept: "text/event-stream", "mcp-session-id": sid } });
    assert.equal(r.status, 401, method);
  }
  // a state, not a time: a call of the session's own token answered after
  // them means anything queued before it has run (a session's items run in order)
  const barrier = await fetch(srv.url, { method: "POST", headers: { ...HEADERS, "mcp-session-id": sid, authorization: `Bearer ${TOK_A}`,
    "mcp-protocol-version": "2025-11-25" }, body: JSON.stringify({ jsonrpc: "2.0", id: 98, method: "tools/call", params: { name: "stat", arguments: { path: "." } } }) });
  assert.equal(barrier.status, 200);
  await barrier.text();
  for (let i = 1; i <= n; i++) assert.ok(!fs.existsSync(path.join(A, `pwned${i}.txt`)), "the write did not run");
  // the session is still there for its own token
  const r = await fetch(srv.url, { method: "POST", headers: { ...HEADERS, "mcp-session-id": sid, authorization: `Bearer ${TOK_A}` },
    body: JSON.stringify({ jsonrpc: "2.0", id: 99, method: "ping" }) });
  assert.equal(r.status, 200);
});

test("tenant A cannot reach tenant B's files by any path or tool", T, async () => {
  const { client: a } = await connect(TOK_A);
  const { client: b } = await connect(TOK_B);
  // the same agent path, each tenant's own file
  const rb = await b.callTool({ name: "read_file", arguments: { path: "/workspace/secret-b.txt" } });
  assert.match(text(rb), /bravo secret/);
  const attempts = [
    ["read_file", { path: "/workspace/secret-b.txt" }],
    ["read_file", { path: "secret-b.txt" }],
    ["read_file", { path: "../bob/secret-b.txt" }],
    ["read_file", { path: `${B}/secret-b.txt` }],
    ["read_file", { path: "/workspace/../bob/secret-b.txt" }],
    ["read_file", { path: "link-to-b" }],
    ["read_file", { path: "dirlink-to-b/secret-b.txt" }],
    ["list_dir", { path: "dirlink-to-b" }],
    ["list_dir", { path: ".." }],
    ["list_dir", { path: B }],
    ["stat", { path: `${B}/sub/deep.txt` }],
    ["grep", { pattern: "bravo", path: "/" }],
    ["grep", { pattern: "bravo" }],
    ["grep", { pattern: "bravo", path: B }],
    ["glob", { pattern: "**/secret-b.txt" }],
    ["glob", { pattern: "**", path: ".." }],
    ["copy", { source: `${B}/secret-b.txt`, destination: "stolen.txt" }],
    ["copy", { source: "dirlink-to-b/secret-b.txt", destination: "stolen2.txt" }],
    ["move", { source: "link-to-b", destination: "/workspace/../bob/overwritten.txt" }],
    ["write_file", { path: `${B}/planted.txt`, content: "x" }],
    ["write_file", { path: "dirlink-to-b/planted.txt", content: "x" }],
    ["edit_file", { path: "dirlink-to-b/secret-b.txt", edits: [{ old_text: "bravo", new_text: "owned" }] }],
    ["remove", { path: "dirlink-to-b/sub", recursive: true }],
  ];
  for (const [name, args] of attempts) {
    const r = await a.callTool({ name, arguments: args });
    let out = JSON.stringify(r); // less the paths the error repeats from the arguments
    for (const v of Object.values(args)) if (typeof v === "string") out = out.split(JSON.stringify(v).slice(1, -1)).join("");
    // B's contents, or the name of a file only B's tree has
    assert.ok(!/bravo (secret|deep)|deep\.txt/.test(out), `${name} ${JSON.stringify(args)} leaked B: ${out.slice(0, 300)}`);
  }
  // and by resource URI: read, subscribe and list through A's session
  const uris = ["file:///workspace/secret-b.txt", `file://${B}/secret-b.txt`, "file:///workspace/link-to-b",
    "file:///workspace/dirlink-to-b/secret-b.txt", "file:///workspace/%2e%2e/bob/secret-b.txt",
    "file:///workspace/..%2fbob/secret-b.txt", `file://localhost${B}/sub/deep.txt`];
  for (const uri of uris) {
    const out = JSON.stringify(await a.readResource({ uri }).catch((e) => ({ error: String(e) })));
    assert.ok(!/bravo (secret|deep)/.test(out), `resources/read ${uri} leaked B: ${out.slice(0, 300)}`);
    await a.subscribeResource({ uri }).catch(() => {});
  }
  let cursor;
  do {
    const page = await a.listResources(cursor ? { cursor } : {});
    for (const r of page.resources) assert.ok(!/deep\.txt|secret-b\.txt/.test(r.uri), `listed ${r.uri}`);
    cursor = page.nextCursor;
  } while (cursor);
  // B's tree is as it was
  assert.equal(fs.readFileSync(path.join(B, "secret-b.txt"), "utf8"), "bravo secret\n");
  assert.ok(fs.existsSync(path.join(B, "sub", "deep.txt")));
  assert.ok(!fs.existsSync(path.join(B, "planted.txt")));
  assert.ok(!fs.existsSync(path.join(B, "overwritten.txt")));
  for (const f of ["stolen.txt", "stolen2.txt"]) {
    const p = path.join(A, f);
    assert.ok(!fs.existsSync(p) || !fs.readFileSync(p, "utf8").includes("bravo"), f);
  }
  await a.close();
  await b.close();
});

test("a session id used with another tenant's token is 404, and runs nothing", T, async () => {
  const sidB = await rawSession(TOK_B);
  const h = { ...HEADERS, "mcp-session-id": sidB, authorization: `Bearer ${TOK_A}` };
  const r = await fetch(srv.url, { method: "POST", headers: h, body: JSON.stringify({ jsonrpc: "2.0", id: 1,
    method: "tools/call", params: { name: "read_file", arguments: { path: "secret-b.txt" } } }) });
  assert.equal(r.status, 404);
  assert.doesNotMatch(await r.text(), /bravo/);
  const g = await fetch(srv.url, { method: "GET", headers: { accept: "text/event-stream", "mcp-session-id": sidB,
    authorization: `Bearer ${TOK_A}`, "last-event-id": "1-0" } });
  assert.equal(g.status, 404, "B's stream cannot be resumed with A's token");
  const d = await fetch(srv.url, { method: "DELETE", headers: { "mcp-session-id": sidB, authorization: `Bearer ${TOK_A}` } });
  assert.equal(d.status, 404, "nor deleted");
  const still = await fetch(srv.url, { method: "POST", headers: { ...HEADERS, "mcp-session-id": sidB, authorization: `Bearer ${TOK_B}` },
    body: JSON.stringify({ jsonrpc: "2.0", id: 2, method: "ping" }) });
  assert.equal(still.status, 200);
});

test("a non-loopback bind without tokens refuses to start", T, async () => {
  for (const listen of ["0.0.0.0:0", "[::]:0"]) {
    const r = await runToEnd(["mcp", "--root", A, "--http", listen]);
    assert.notEqual(r.code, 0, listen);
    assert.match(r.stderr, /refusing to listen on .* without tokens/, listen);
  }
  // the same bind with tokens starts
  const s = await startHttp(["--config", path.join(TMP, "server.yaml")], { listen: "0.0.0.0:0" });
  const r = await fetch(`http://127.0.0.1:${s.port}/mcp`, { method: "POST", headers: HEADERS, body: initBody() });
  assert.equal(r.status, 401);
  await s.stop();
});

test("a body over the token's max_body is 413 (by Content-Length and by chunks)", T, async () => {
  const big = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize",
    params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "x".repeat(4000), version: "1" } } });
  const r = await fetch(srv.url, { method: "POST", headers: { ...HEADERS, authorization: `Bearer ${TOK_SMALL}` }, body: big });
  assert.equal(r.status, 413);
  assert.equal((await r.json()).error.code, -32000);
  // chunked: no Content-Length, caught as it streams in
  const r2 = await rawRequest(srv.url, { headers: { ...HEADERS, authorization: `Bearer ${TOK_SMALL}`, "transfer-encoding": "chunked" },
    chunks: Array.from({ length: 8 }, () => "x".repeat(1024)) });
  assert.equal(r2.status, 413);
  assert.equal(JSON.parse(r2.body).error.code, -32000);
  // the same body is fine for a token with the default limit
  const ok = await fetch(srv.url, { method: "POST", headers: { ...HEADERS, authorization: `Bearer ${TOK_A}` }, body: big });
  assert.equal(ok.status, 200);
  await ok.body.cancel();
});

test("a token's max_calls and max_sessions: 429 with a JSON-RPC error", T, async () => {
  write(path.join(A, "slow.txt"), ("a".repeat(20) + "b\n").repeat(50000));
  const sid = await rawSession(TOK_SMALL);
  const h = { ...HEADERS, "mcp-session-id": sid, authorization: `Bearer ${TOK_SMALL}` };
  const ac = new AbortController();
  const long = await fetch(srv.url, { method: "POST", headers: h, signal: ac.signal, body: JSON.stringify({ jsonrpc: "2.0", id: 1,
    method: "tools/call", params: { name: "grep", arguments: { pattern: "(a+)+$", path: "slow.txt" } } }) });
  assert.equal(long.status, 200);
  const second = await fetch(srv.url, { method: "POST", headers: h, body: JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/list" }) });
  assert.equal(second.status, 429);
  assert.equal((await second.json()).error.code, -32000);
  await fetch(srv.url, { method: "POST", headers: h, body: JSON.stringify({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 1 } }) });
  for await (const ev of sseEvents(long.body, 20_000)) if (ev.data && JSON.parse(ev.data).id === 1) break;
  // sessions: this token may hold 3 (one is open above)
  await rawSession(TOK_SMALL);
  await rawSession(TOK_SMALL);
  const r = await fetch(srv.url, { method: "POST", headers: { ...HEADERS, authorization: `Bearer ${TOK_SMALL}` }, body: initBody() });
  assert.equal(r.status, 429);
  fs.rmSync(path.join(A, "slow.txt"));
});

test("1,000 sessions opened and abandoned are reaped", T, async () => {
  const dir = path.join(TMP, "reap");
  fs.mkdirSync(dir);
  write(path.join(TMP, "reap.yaml"), `roots: [reap]
http:
  session_ttl: 5s
  max_sessions: 1000
  max_calls: 100
`);
  const s = await startHttp(["--config", path.join(TMP, "reap.yaml")]);
  const open = async () => {
    const r = await fetch(s.url, { method: "POST", headers: HEADERS, body: initBody() });
    if (r.status === 200) await r.text();
    return { status: r.status, sid: r.headers.get("mcp-session-id") };
  };
  const sids = [];
  const t0 = Date.now();
  for (let i = 0; i < 1000; i += 50) {
    const batch = await Promise.all(Array.from({ length: 50 }, open));
    for (const b of batch) { assert.equal(b.status, 200); sids.push(b.sid); }
  }
  assert.equal(new Set(sids).size, 1000);
  const took = Date.now() - t0;
  console.log(`1,000 sessions opened in ${took} ms`);
  // while they all live (opened within the 5 s expiry), a 1,001st is refused
  if (took < 4000) assert.equal((await open()).status, 429, "the 1,001st is over max_sessions while the others live");
  // a state, not a time: the access log says each was reaped (a request to
  // a live session would keep it alive, so none is sent before)
  const reaped = (sid) => s.stderr().includes(`session ${sid.slice(0, 8)} closed (expired)`);
  await waitFor(() => [sids[0], sids[499], sids[999]].every(reaped), "the log's lines of the expired sessions reaped", 30_000, 100);
  // every abandoned one is gone (404), and their room is free again
  for (const sid of [sids[0], sids[499], sids[999]]) {
    const r = await fetch(s.url, { method: "POST", headers: { ...HEADERS, "mcp-session-id": sid },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }) });
    assert.equal(r.status, 404);
  }
  const again = await Promise.all(Array.from({ length: 50 }, open));
  for (const b of again) assert.equal(b.status, 200);
  await s.stop();
});

// One HTTP/1.1 request written on a socket as given: header lines repeat
// exactly as listed (fetch's Headers would merge them into "a, b", and
// node's http lower-cases and merges same-named keys). Read to the close:
// {status, body}.
function rawLines(url, lines, body) {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const sock = net.connect(Number(u.port), u.hostname, () => {
      sock.end(`POST ${u.pathname} HTTP/1.1\r\nHost: ${u.host}\r\nConnection: close\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\n${lines.map((l) => `${l}\r\n`).join("")}\r\n${body}`);
    });
    const parts = [];
    sock.on("data", (d) => parts.push(d));
    sock.on("error", reject);
    sock.on("close", () => {
      const raw = Buffer.concat(parts).toString("utf8");
      const at = raw.indexOf("\r\n\r\n");
      let body = at < 0 ? "" : raw.slice(at + 4);
      if (/\r\ntransfer-encoding: *chunked/i.test(raw.slice(0, at))) {
        let out = "";
        for (let n; (n = parseInt(body, 16)) > 0;) {
          const from = body.indexOf("\r\n") + 2;
          out += body.slice(from, from + n);
          body = body.slice(from + n + 2);
        }
        body = out;
      }
      resolve({ status: Number(raw.split(" ")[1]), body });
    });
  });
}

test("a header a proxy routes on, repeated: 400 -32020 with the request's id, and nothing is written", T, async () => {
  // HAProxy's req.hdr() reads the last of repeated headers, libmicrohttpd's
  // lookup the first: a rule "only read_file" on Mcp-Name saw read_file
  // while the body (and the first Mcp-Name) said write_file
  const V = "2026-07-28";
  const target = path.join(A, "dup-headers.txt");
  const call = (id, name = "write_file") => JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call",
    params: { name, arguments: { path: "/workspace/dup-headers.txt", content: "written\n" },
      _meta: { "io.modelcontextprotocol/protocolVersion": V, "io.modelcontextprotocol/clientCapabilities": {} } } });
  const base = { "Content-Type": "application/json", Accept: "application/json", Authorization: `Bearer ${TOK_A}`,
    "MCP-Protocol-Version": V, "Mcp-Method": "tools/call", "Mcp-Name": "write_file" };
  const lines = (repeat) => Object.entries(base).flatMap(([k, v]) =>
    (repeat[k] || [v]).map((x) => `${k}: ${x}`)).concat(repeat.extra || []);
  const cases = [
    ["Mcp-Name: the body's tool first, read_file last", { "Mcp-Name": ["write_file", "read_file"] }],
    ["Mcp-Name: twice the same", { "Mcp-Name": ["write_file", "write_file"] }],
    ["Mcp-Name and mcp-name", { extra: ["mcp-name: read_file"] }],
    ["Mcp-Method: tools/call, then tools/list", { "Mcp-Method": ["tools/call", "tools/list"] }],
    ["Mcp-Method: twice the same", { "Mcp-Method": ["tools/call", "tools/call"] }],
    ["MCP-Protocol-Version: twice", { "MCP-Protocol-Version": [V, V] }],
    ["MCP-Protocol-Version: this one, then a session revision", { "MCP-Protocol-Version": [V, "2025-11-25"] }],
    ["Mcp-Param-Path: twice", { extra: ["Mcp-Param-Path: /workspace/dup-headers.txt", "mcp-param-path: /workspace/other.txt"] }],
  ];
  for (const [what, repeat] of cases) {
    const id = `dup-${what}`;
    const r = await rawLines(srv.url, lines(repeat), call(id));
    assert.equal(r.status, 400, `${what}: ${r.body}`);
    const m = JSON.parse(r.body);
    assert.equal(m.error.code, -32020, `${what}: ${r.body}`);
    assert.equal(m.id, id, `${what}: the error names the request`);
    assert.match(m.error.message, /repeated/, what);
    assert.equal(fs.existsSync(target), false, `${what}: nothing was written`);
  }
  // the same request with each header once is served: the cases above
  // were refused for the repetition alone
  const ok = await rawLines(srv.url, lines({ extra: ["Mcp-Param-Path: /workspace/dup-headers.txt"] }), call("once"));
  assert.equal(ok.status, 200, ok.body);
  assert.notEqual(JSON.parse(ok.body).result?.isError, true, ok.body);
  assert.equal(fs.readFileSync(target, "utf8"), "written\n");
});
