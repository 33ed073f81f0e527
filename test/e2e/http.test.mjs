// `burrow mcp --http`: MCP Streamable HTTP driven by the official SDK client
// (Client + StreamableHTTPClientTransport), and by plain fetch where the SDK
// hides what is under test (a dropped SSE stream resumed with Last-Event-ID,
// the session after DELETE).
//
//   cd test/e2e && npm ci && node --test http.test.mjs

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema, ListRootsRequestSchema, ResourceUpdatedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { startHttp, sseEvents, initBody, HEADERS, waitFor } from "./http_helpers.mjs";

const T = { timeout: 60_000 };
let TMP;
let counter = 0;
const servers = [];

before(() => { TMP = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "burrow-http-"))); });
after(async () => {
  for (const s of servers) { const t0 = Date.now(); await s.stop(); if (Date.now() - t0 > 1000) console.log(`stop took ${Date.now() - t0} ms`); }
  if (TMP) fs.rmSync(TMP, { recursive: true, force: true });
});

function workspace(files = {}) {
  const dir = path.join(TMP, `ws${++counter}`);
  fs.mkdirSync(dir);
  for (const [rel, body] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
    fs.writeFileSync(path.join(dir, rel), body);
  }
  return dir;
}

async function serve(args) {
  const s = await startHttp(args);
  servers.push(s);
  return s;
}

async function connect(url, opts = {}) {
  const client = new Client({ name: "burrow-http-e2e", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(url), opts);
  await client.connect(transport);
  return { client, transport };
}

// (a+)+$ on lines of a's ending in b: minutes of backtracking, no literal
const BACKTRACK = "(a+)+$";
const slowFile = () => ("a".repeat(20) + "b\n").repeat(50000);

test("SDK client: initialize, list tools, read, grep, edit over HTTP", T, async () => {
  const dir = workspace({ "a.txt": "hello\nworld\n", "src/x.c": "int main(void) { return 0; }\n" });
  const s = await serve(["--root", dir]);
  const { client, transport } = await connect(s.url);
  assert.match(transport.sessionId, /^[0-9a-f]{32}$/);
  assert.equal(client.getServerVersion().name, "burrow");
  const { tools } = await client.listTools();
  for (const name of ["read_file", "grep", "edit_file"]) assert.ok(tools.some((t) => t.name === name), name);

  const read = await client.callTool({ name: "read_file", arguments: { path: "a.txt" } });
  assert.equal(read.isError, undefined);
  assert.equal(read.structuredContent.total_lines, 2);
  assert.match(read.content[0].text, /hello/);

  const grep = await client.callTool({ name: "grep", arguments: { pattern: "main" } });
  assert.deepEqual(grep.structuredContent.files, ["src/x.c"]);

  const edit = await client.callTool({ name: "edit_file",
    arguments: { path: "a.txt", edits: [{ old_text: "world", new_text: "there" }] } });
  assert.equal(edit.isError, undefined, JSON.stringify(edit));
  assert.equal(fs.readFileSync(path.join(dir, "a.txt"), "utf8"), "hello\nthere\n");

  // undo is per session: the edit above is this session's to undo
  const undo = await client.callTool({ name: "undo_edit", arguments: { path: "a.txt" } });
  assert.equal(undo.isError, undefined, JSON.stringify(undo));
  assert.equal(fs.readFileSync(path.join(dir, "a.txt"), "utf8"), "hello\nworld\n");

  const pong = await client.ping();
  assert.deepEqual(pong, {});
  await client.close();
});

test("undo_edit of one session does not see another session's edits", T, async () => {
  const dir = workspace({ "u.txt": "one\n" });
  const s = await serve(["--root", dir]);
  const a = await connect(s.url);
  const b = await connect(s.url);
  const e = await a.client.callTool({ name: "edit_file", arguments: { path: "u.txt", edits: [{ old_text: "one", new_text: "two" }] } });
  assert.equal(e.isError, undefined);
  const undoB = await b.client.callTool({ name: "undo_edit", arguments: { path: "u.txt" } });
  assert.equal(undoB.isError, true, "session b has nothing to undo");
  assert.equal(fs.readFileSync(path.join(dir, "u.txt"), "utf8"), "two\n");
  await a.client.close();
  await b.client.close();
});

test("progress over SSE, then cancellation stops the call on the server", T, async () => {
  const dir = workspace({ "slow.txt": slowFile() });
  const s = await serve(["--root", dir]);
  const { client } = await connect(s.url);
  const progress = [];
  const ac = new AbortController();
  const call = client.callTool({ name: "grep", arguments: { pattern: BACKTRACK } }, undefined, {
    signal: ac.signal, onprogress: (p) => progress.push(p), timeout: 120_000 });
  await waitFor(() => progress.length >= 2, "two progress notifications over the POST's SSE stream");
  assert.equal(typeof progress[0].progress, "number");
  ac.abort("test");
  await assert.rejects(call);
  // the session's worker is free again only if the grep stopped: the next
  // call on the same session answers long before the grep would have ended
  const t0 = performance.now();
  const r = await client.callTool({ name: "read_file", arguments: { path: "slow.txt", limit: 1 } });
  const ms = performance.now() - t0;
  assert.equal(r.isError, undefined);
  console.log(`a call on the session ${ms.toFixed(0)} ms after the cancel`);
  assert.ok(ms < 10_000, `the next call took ${ms.toFixed(0)} ms: the grep was not cancelled`);
  await client.close();
});

test("a long call in one session does not stall another session", T, async () => {
  const dir = workspace({ "slow.txt": slowFile(), "b.txt": "b\n" });
  const s = await serve(["--root", dir]);
  const a = await connect(s.url);
  const b = await connect(s.url);
  const ac = new AbortController();
  let running;
  const started = new Promise((r) => { running = r; });
  // a state, not a time: its first progress report says the grep runs
  const long = a.client.callTool({ name: "grep", arguments: { pattern: BACKTRACK } }, undefined,
    { signal: ac.signal, timeout: 120_000, onprogress: () => running() }).catch(() => "aborted");
  await started;
  const t0 = performance.now();
  for (let i = 0; i < 5; i++) {
    const r = await b.client.callTool({ name: "read_file", arguments: { path: "b.txt" } });
    assert.equal(r.isError, undefined);
  }
  const ms = performance.now() - t0;
  console.log(`5 reads in another session during a long grep: ${ms.toFixed(0)} ms`);
  assert.ok(ms < 5000, `the other session waited ${ms.toFixed(0)} ms`);
  // ping on the busy session is answered by the transport itself
  const p0 = performance.now();
  assert.deepEqual(await a.client.ping(), {});
  assert.ok(performance.now() - p0 < 2000);
  ac.abort("done");
  assert.equal(await long, "aborted");
  const t1 = performance.now(); // the cancel reached the grep: the session answers again
  assert.equal((await a.client.callTool({ name: "stat", arguments: { path: "b.txt" } })).isError, undefined);
  assert.ok(performance.now() - t1 < 10_000);
  await a.client.close();
  await b.client.close();
});

test("a dropped SSE stream is resumed with Last-Event-ID: nothing lost", T, async () => {
  const dir = workspace({ "slow.txt": slowFile() });
  // the grep ends by itself after 1.5 s (max_search_ms), sending progress meanwhile
  const s = await serve(["--root", dir, "--cap", "max_search_ms=1500"]);
  const init = await fetch(s.url, { method: "POST", headers: HEADERS, body: initBody() });
  const sid = init.headers.get("mcp-session-id");
  await init.body.cancel();
  const h = { ...HEADERS, "mcp-session-id": sid, "mcp-protocol-version": "2025-11-25" };
  await fetch(s.url, { method: "POST", headers: h, body: JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }) });

  const ac = new AbortController();
  const post = await fetch(s.url, { method: "POST", headers: h, signal: ac.signal, body: JSON.stringify({
    jsonrpc: "2.0", id: 7, method: "tools/call",
    params: { name: "grep", arguments: { pattern: BACKTRACK }, _meta: { progressToken: "p" } } }) });
  assert.equal(post.status, 200);
  assert.match(post.headers.get("content-type"), /text\/event-stream/);
  const first = [];
  for await (const ev of sseEvents(post.body)) {
    first.push(ev);
    if (ev.data && JSON.parse(ev.data).method === "notifications/progress") break;
  }
  ac.abort(); // the connection drops mid-call
  assert.equal(first[0].data, "", "a priming event (id, no data) comes first");
  assert.ok(first[0].retry > 0, "with a retry hint");
  const lastId = first.at(-1).id;
  assert.ok(lastId);

  const get = await fetch(s.url, { method: "GET", headers: { ...h, accept: "text/event-stream", "last-event-id": lastId } });
  assert.equal(get.status, 200);
  const rest = [];
  for await (const ev of sseEvents(get.body, 20_000)) {
    if (!ev.data) continue;
    const m = JSON.parse(ev.data);
    rest.push(m);
    if (m.id === 7) break;
  }
  const answer = rest.at(-1);
  assert.equal(answer.id, 7, "the call's answer arrives on the resumed stream");
  assert.equal(answer.result.structuredContent.limit, "time", "the grep ran to its time budget");
  // events after lastId only: none of the first connection's again
  const seen = new Set(first.filter((e) => e.data).map((e) => e.data));
  for (const m of rest) assert.ok(!seen.has(JSON.stringify(m)) || m.method === "notifications/progress");
});

test("DELETE ends the session: its id is 404 afterwards", T, async () => {
  const dir = workspace({ "a.txt": "x\n" });
  const s = await serve(["--root", dir]);
  const { client, transport } = await connect(s.url);
  const sid = transport.sessionId;
  await transport.terminateSession();
  const r = await fetch(s.url, { method: "POST", headers: { ...HEADERS, "mcp-session-id": sid },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }) });
  assert.equal(r.status, 404);
  const body = await r.json();
  assert.equal(body.error.code, -32001);
  await client.close();
});

test("protocol checks: no session id 400, bad MCP-Protocol-Version 400, PUT 405, GET stream", T, async () => {
  const dir = workspace();
  const s = await serve(["--root", dir]);
  const list = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" });
  let r = await fetch(s.url, { method: "POST", headers: HEADERS, body: list });
  assert.equal(r.status, 400);
  const init = await fetch(s.url, { method: "POST", headers: HEADERS, body: initBody() });
  const sid = init.headers.get("mcp-session-id");
  await init.body.cancel();
  r = await fetch(s.url, { method: "POST", headers: { ...HEADERS, "mcp-session-id": sid, "mcp-protocol-version": "1999-01-01" }, body: list });
  assert.equal(r.status, 400);
  r = await fetch(s.url, { method: "PUT", headers: HEADERS, body: list });
  assert.equal(r.status, 405);
  assert.match(r.headers.get("allow"), /POST/);
  r = await fetch(s.url, { method: "POST", headers: { ...HEADERS, "mcp-session-id": sid, accept: "application/json" }, body: list });
  assert.equal(r.status, 200);
  assert.match(r.headers.get("content-type"), /application\/json/);
  assert.ok((await r.json()).result.tools.length > 0);
  // the GET stream: open, a second one is refused while it is
  const ac = new AbortController();
  const g = await fetch(s.url, { method: "GET", headers: { "mcp-session-id": sid, accept: "text/event-stream" }, signal: ac.signal });
  assert.equal(g.status, 200);
  const g2 = await fetch(s.url, { method: "GET", headers: { "mcp-session-id": sid, accept: "text/event-stream" } });
  assert.equal(g2.status, 409);
  ac.abort();
});

// A server-to-client request in the middle of a call: a policy's "ask"
// goes out on the POST's SSE stream as elicitation/create, the client's
// answer comes back as a POST of its own, and the call goes on.
test("a policy's 'ask' reaches the HTTP client as an elicitation, and its answer decides", T, async () => {
  const dir = workspace({
    "ws/keep.txt": "k\n",
    "ask.lua": `return { name = "ask-writes", check = function(req)
      if req.operation == "write" then return "ask", "writes need a person's yes" end
    end }\n`,
  });
  fs.writeFileSync(path.join(dir, "burrow.yaml"), "roots: [ws]\npolicies: [./ask.lua]\n");
  const s = await serve(["--config", path.join(dir, "burrow.yaml")]);
  const client = new Client({ name: "asker", version: "1" }, { capabilities: { elicitation: {} } });
  const asked = [];
  let answer = { action: "accept", content: { approve: true } };
  client.setRequestHandler(ElicitRequestSchema, async (req) => { asked.push(req.params.message); return answer; });
  await client.connect(new StreamableHTTPClientTransport(new URL(s.url)));
  const yes = await client.callTool({ name: "write_file", arguments: { path: "yes.txt", content: "y\n" } });
  assert.equal(yes.isError, undefined, JSON.stringify(yes));
  assert.equal(fs.readFileSync(path.join(dir, "ws", "yes.txt"), "utf8"), "y\n");
  answer = { action: "decline" };
  const no = await client.callTool({ name: "write_file", arguments: { path: "no.txt", content: "n\n" } });
  assert.equal(no.isError, true);
  assert.ok(!fs.existsSync(path.join(dir, "ws", "no.txt")));
  assert.equal(asked.length, 2);
  assert.match(asked[0], /writes need a person's yes/);
  await client.close();
});

// resources/subscribe over HTTP: the change notification is a message the
// server starts outside any request, so it comes on the session's GET stream.
test("a subscribed file changed from outside: notifications/resources/updated on the GET stream", T, async () => {
  const dir = workspace({ "watched.txt": "v1\n" });
  const s = await serve(["--root", dir]);
  const { client } = await connect(s.url);
  const updates = [];
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => updates.push({ uri: n.params.uri, at: performance.now() }));
  const { resources } = await client.listResources();
  const res = resources.find((r) => r.uri.endsWith("/watched.txt"));
  assert.ok(res, JSON.stringify(resources));
  await client.subscribeResource({ uri: res.uri });
  // no wait for the GET stream: an update sent before the SDK opens it is
  // kept for it (what no reader has had yet)
  const t0 = performance.now();
  fs.writeFileSync(path.join(dir, "watched.txt"), "v2\n");
  await waitFor(() => updates.length > 0, "notifications/resources/updated over HTTP");
  assert.equal(updates[0].uri, res.uri);
  console.log(`resources/updated ${(updates[0].at - t0).toFixed(0)} ms after the change (HTTP)`);
  const read = await client.readResource({ uri: res.uri });
  assert.match(read.contents[0].text, /v2/);
  await client.close();
});

// A request the server starts on its own (roots/list after initialized)
// goes on the GET stream, and reaches the client even when it was sent
// before the client opened that stream.
test("the server's roots/list reaches an HTTP client on the GET stream", T, async () => {
  const dir = workspace({ "a.txt": "a\n" });
  const s = await serve(["--root", dir]);
  const client = new Client({ name: "roots", version: "1" }, { capabilities: { roots: { listChanged: true } } });
  let asked = 0;
  client.setRequestHandler(ListRootsRequestSchema, async () => { asked++; return { roots: [{ uri: `file://${dir}`, name: "ws" }] }; });
  await client.connect(new StreamableHTTPClientTransport(new URL(s.url)));
  await waitFor(() => asked > 0, "roots/list on the GET stream");
  assert.equal(asked, 1, "the client was asked for its roots");
  const r = await client.callTool({ name: "read_file", arguments: { path: "a.txt" } });
  assert.equal(r.isError, undefined);
  await client.close();
});
