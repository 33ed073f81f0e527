// subscriptions/listen (MCP 2026-07-28) with the official v2 SDK client
// (@modelcontextprotocol/client, pinned in package-lock.json): over stdio
// many listens share the channel, each ended by its cancel; over HTTP each
// is the answer stream of its POST, held by the listener, ended by closing
// it. What a listen did not ask for, or a URI a read would be denied, is
// never sent. Every wait here is for a message or a state, never a time.
//
//   cd test/e2e && npm ci && node --test listen.test.mjs

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { BIN, HEADERS, startHttp, sseEvents, waitFor } from "./http_helpers.mjs";

const T = { timeout: 90_000 };
const META = {
  "io.modelcontextprotocol/protocolVersion": "2026-07-28",
  "io.modelcontextprotocol/clientCapabilities": {},
};
const SUB = "io.modelcontextprotocol/subscriptionId";
let TMP;
let counter = 0;
const servers = [];

before(() => { TMP = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "burrow-listen-"))); });
after(async () => {
  for (const s of servers) await s.stop();
  if (TMP) fs.rmSync(TMP, { recursive: true, force: true });
});

// A workspace with a file, a folder, a secret the policy hides, and a
// config naming two tools (a reload changes the list).
function setup() {
  const dir = path.join(TMP, `s${++counter}`);
  fs.mkdirSync(path.join(dir, "ws", "sub"), { recursive: true });
  fs.writeFileSync(path.join(dir, "ws", "notes.txt"), "alpha\n");
  fs.writeFileSync(path.join(dir, "ws", "secret.txt"), "hidden\n");
  fs.writeFileSync(path.join(dir, "hide.lua"), `return { name = "hide", rules = { { deny = { "read", "list" }, paths = { "secret.txt" } } } }\n`);
  fs.writeFileSync(path.join(dir, "burrow.yaml"), "roots: [ws]\ntools: [read_file, write_file]\npolicies: [default, ./hide.lua]\n");
  return dir;
}
const uri = (dir, rel) => "file://" + path.join(dir, "ws", rel);

// The notifications a client gets, and a wait for one that matches.
function collector(c) {
  const seen = [];
  const waiters = [];
  const push = (method) => (n) => {
    const m = { method, ...n.params };
    seen.push(m);
    for (const w of waiters.splice(0)) if (!w(m)) waiters.push(w);
  };
  c.setNotificationHandler("notifications/resources/updated", push("updated"));
  c.setNotificationHandler("notifications/tools/list_changed", push("tools"));
  c.setNotificationHandler("notifications/prompts/list_changed", push("prompts"));
  c.setNotificationHandler("notifications/resources/list_changed", push("resources"));
  return {
    seen,
    waitFor(pred, what) {
      const hit = seen.find(pred);
      if (hit) return Promise.resolve(hit);
      return new Promise((resolve, reject) => {
        const t = setTimeout(() => reject(new Error(`no ${what}; seen: ${JSON.stringify(seen)}`)), 30_000);
        waiters.push((m) => { if (!pred(m)) return false; clearTimeout(t); resolve(m); return true; });
      });
    },
  };
}

test("stdio: a listen gets updates of its URIs only, what it asked for only, and nothing once cancelled", T, async () => {
  const dir = setup();
  const c = new Client({ name: "listen-stdio", version: "1" }, { versionNegotiation: { mode: "auto" } });
  const transport = new StdioClientTransport({ command: BIN, args: ["mcp", "--config", path.join(dir, "burrow.yaml")], stderr: "ignore" });
  await c.connect(transport);
  assert.equal(c.getNegotiatedProtocolVersion(), "2026-07-28");
  const caps = c.getServerCapabilities();
  assert.equal(caps.resources.subscribe, true, "server/discover names resource subscriptions");
  const got = collector(c);

  const a = await c.listen({
    resourceSubscriptions: [uri(dir, "notes.txt"), uri(dir, "secret.txt"), uri(dir, "nope.txt"), "https://example.com/x"],
    toolsListChanged: true,
  });
  assert.deepEqual(a.honoredFilter, { resourceSubscriptions: [uri(dir, "notes.txt")], toolsListChanged: true },
    "the denied, the missing and the foreign URI are not honoured");
  const b = await c.listen({ resourceSubscriptions: [uri(dir, "sub")] });
  assert.deepEqual(b.honoredFilter, { resourceSubscriptions: [uri(dir, "sub")] });

  fs.appendFileSync(path.join(dir, "ws", "notes.txt"), "beta\n");
  fs.writeFileSync(path.join(dir, "ws", "sub", "new.txt"), "x");
  fs.appendFileSync(path.join(dir, "ws", "secret.txt"), "more\n");
  const na = await got.waitFor((m) => m.method === "updated" && m.uri === uri(dir, "notes.txt"), "update of notes.txt");
  const nb = await got.waitFor((m) => m.method === "updated" && m.uri === uri(dir, "sub"), "update of sub/");
  const idA = na._meta[SUB], idB = nb._meta[SUB];
  assert.equal(typeof idA, "string");
  assert.notEqual(idA, idB, "each listen's messages carry its own id");
  assert.ok(got.seen.every((m) => m.method !== "updated" || (m.uri === uri(dir, "notes.txt") ? m._meta[SUB] === idA : m._meta[SUB] === idB)),
    JSON.stringify(got.seen));

  // a reload that changes the tools: the listen that asked hears it, with its id
  fs.writeFileSync(path.join(dir, "burrow.yaml"), "roots: [ws]\ntools: [read_file, write_file, stat]\npolicies: [default, ./hide.lua]\n");
  process.kill(transport.pid, "SIGHUP");
  const tl = await got.waitFor((m) => m.method === "tools", "tools/list_changed");
  assert.equal(tl._meta[SUB], idA);

  // cancelled: a request answered after the cancel proves it was handled
  await a.close();
  assert.equal(await a.closed, "local");
  await c.listTools();
  const before = got.seen.length;
  fs.appendFileSync(path.join(dir, "ws", "notes.txt"), "gamma\n");
  const a2 = await c.listen({ resourceSubscriptions: [uri(dir, "notes.txt")] });
  fs.appendFileSync(path.join(dir, "ws", "notes.txt"), "delta\n");
  const n2 = await got.waitFor((m, i) => m.method === "updated" && m._meta[SUB] !== idA && m.uri === uri(dir, "notes.txt"), "update on the second listen");
  assert.notEqual(n2._meta[SUB], idA);
  assert.ok(got.seen.slice(before).every((m) => m._meta[SUB] !== idA), "nothing reaches a cancelled listen");
  assert.ok(got.seen.every((m) => m.uri !== uri(dir, "secret.txt")), "the hidden file's changes never reach the client");
  assert.ok(got.seen.every((m) => m.method !== "prompts" && m.method !== "resources"), "nothing not asked for");
  await a2.close();
  await b.close();
  await c.close();
});

test("HTTP: a listen is a stream of its own that outlives no client; the v2 SDK gets its updates", T, async () => {
  const dir = setup();
  const s = await startHttp(["--config", path.join(dir, "burrow.yaml")]);
  servers.push(s);
  const c = new Client({ name: "listen-http", version: "1" }, { versionNegotiation: { mode: "auto" } });
  const t = new StreamableHTTPClientTransport(new URL(s.url));
  await c.connect(t);
  assert.equal(c.getNegotiatedProtocolVersion(), "2026-07-28");
  const caps = c.getServerCapabilities();
  assert.equal(caps.resources.subscribe, true);
  assert.equal(caps.tools.listChanged, undefined, "an HTTP server never reloads: no list changes offered");
  const got = collector(c);

  const a = await c.listen({ resourceSubscriptions: [uri(dir, "notes.txt"), uri(dir, "secret.txt")], toolsListChanged: true });
  assert.deepEqual(a.honoredFilter, { resourceSubscriptions: [uri(dir, "notes.txt")] });
  const opened = (n) => (s.stderr().match(/ listen [0-9a-f]{8} opened/g) || []).length === n;
  const closed = (n) => (s.stderr().match(/ listen [0-9a-f]{8} closed \(its stream closed\)/g) || []).length === n;
  await waitFor(() => opened(1), "the log line of the listen opened"); // the log's thread writes it
  // calls go on beside it (it holds no worker)
  const r = await c.callTool({ name: "write_file", arguments: { path: "notes.txt", content: "changed\n" } });
  assert.equal(r.isError, undefined);
  const n = await got.waitFor((m) => m.method === "updated" && m.uri === uri(dir, "notes.txt"), "update over HTTP");
  assert.equal(typeof n._meta[SUB], "string");
  fs.appendFileSync(path.join(dir, "ws", "secret.txt"), "more\n");

  await a.close();
  await waitFor(() => closed(1), "the log line of the listen closed"); // the listener sees it
  assert.ok(got.seen.every((m) => m.uri !== uri(dir, "secret.txt")));
  await c.close();
});

test("HTTP: a raw listen — acknowledged first, refused without an SSE Accept, counted as a session, ended with its response on shutdown", T, async () => {
  const dir = setup();
  fs.writeFileSync(path.join(dir, "burrow.yaml"), "roots: [ws]\nhttp:\n  max_sessions_per_address: 1\n  max_watches: 1\n");
  const s = await startHttp(["--config", path.join(dir, "burrow.yaml")]);
  const body = (id, notifications) => JSON.stringify({ jsonrpc: "2.0", id, method: "subscriptions/listen", params: { _meta: META, notifications } });
  const headers = { ...HEADERS, "mcp-protocol-version": "2026-07-28", "mcp-method": "subscriptions/listen" };

  const json = await fetch(s.url, { method: "POST", headers: { ...headers, accept: "application/json" }, body: body(1, {}) });
  assert.equal(json.status, 406);
  assert.equal((await json.json()).id, 1);

  const bad = await fetch(s.url, { method: "POST", headers, body: body(2, { resourceSubscriptions: "x" }) });
  const badEv = [];
  for await (const ev of sseEvents(bad.body, 10_000)) if (ev.data) badEv.push(JSON.parse(ev.data));
  assert.equal(badEv.length, 1);
  assert.equal(badEv[0].id, 2);
  assert.equal(badEv[0].error.code, -32602);

  const res = await fetch(s.url, { method: "POST", headers, body: body(3, { resourceSubscriptions: [uri(dir, "notes.txt"), uri(dir, "sub")], promptsListChanged: true }) });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get("mcp-session-id"), null, "the stateless revision names no session");
  const events = sseEvents(res.body, 60_000);
  const next = async () => { for (;;) { const { value, done } = await events.next(); if (done) return null; if (value.data) return JSON.parse(value.data); } };
  const ack = await next();
  assert.equal(ack.method, "notifications/subscriptions/acknowledged");
  assert.deepEqual(ack.params.notifications, { resourceSubscriptions: [uri(dir, "notes.txt")] });
  assert.equal(ack.params._meta[SUB], 3);
  assert.equal(ack.params._meta["burrow/refused"][0].uri, uri(dir, "sub"), "past the tenant's http.max_watches");

  // the address's one session is the listen's: another is refused until it ends
  const second = await fetch(s.url, { method: "POST", headers, body: body(4, {}) });
  assert.equal(second.status, 429);
  await second.text();

  fs.appendFileSync(path.join(dir, "ws", "notes.txt"), "beta\n");
  const up = await next();
  assert.equal(up.method, "notifications/resources/updated");
  assert.equal(up.params._meta[SUB], 3);

  const stopping = s.stop();
  const last = await next();
  assert.deepEqual(last.result._meta[SUB], 3, "shutdown ends the listen with its response: " + JSON.stringify(last));
  assert.equal(last.id, 3);
  assert.equal(last.result.resultType, "complete");
  assert.equal(await next(), null, "then the stream ends");
  await stopping;
});
