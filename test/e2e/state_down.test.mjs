// End-to-end (issue 45): burrow started while its Redis/Valkey store is
// down (a port nobody listens on) is an outage, not a configuration error:
// over HTTP and over stdio the instance starts with one warning, serves
// what needs nothing from the store (read_file, stat, grep), and fails
// closed what needs it: a session-era session (its record is the store's),
// a quota'd write, an approval (the key that signs its state is the
// store's, got at first need), undo_edit (its records are the store's).
// (Over stdio undo is the process's own, not the store's.) Then
// redis-server comes up on that port and, with no restart of burrow, each
// of those works. A bad URL or an unreadable password file is still
// a start-up error.
//
//   cd test/e2e && node --test state_down.test.mjs     (needs redis-server)

import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { BIN, runToEnd, freePort, sseEvents, startHttp, waitFor } from "./http_helpers.mjs";
import { needRedis, redisOn } from "./redis_helpers.mjs";

const V = "2026-07-28";
const META = {
  "io.modelcontextprotocol/protocolVersion": V,
  "io.modelcontextprotocol/clientInfo": { name: "state-down-test", version: "1" },
  "io.modelcontextprotocol/clientCapabilities": { elicitation: { form: {} } },
};
const YES = { approve: { action: "accept", content: { approve: true } } };
const text = (r) => (r.content || []).map((b) => b.text).join("");
const code = (r) => r?._meta?.["burrow/code"];

let nextId = 1;
// One stateless (2026-07-28) tools/call by raw fetch: the JSON-RPC message.
async function call(url, name, args, extra = {}) {
  const id = nextId++;
  const r = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream",
      "mcp-protocol-version": V, "mcp-method": "tools/call", "mcp-name": name },
    body: JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call", params: { name, arguments: args, _meta: META, ...extra } }),
  });
  if ((r.headers.get("content-type") || "").includes("text/event-stream")) {
    for await (const e of sseEvents(r.body, 60_000)) {
      const m = e.data && JSON.parse(e.data);
      if (m && m.id === id) return m;
    }
    assert.fail(`no answer to ${name}`);
  }
  return JSON.parse(await r.text());
}

// A session-era (SDK 1.x) client over HTTP: connected, or the error.
async function session(url) {
  const c = new Client({ name: "state-down-v1", version: "1" }, { capabilities: {} });
  try {
    await c.connect(new StreamableHTTPClientTransport(new URL(url)));
    return { c };
  } catch (e) {
    await c.close().catch(() => {});
    return { err: e };
  }
}

function config(tmp, rport, extra = "") {
  fs.mkdirSync(path.join(tmp, "shared", "held"), { recursive: true });
  fs.writeFileSync(path.join(tmp, "shared", "r.txt"), "read me\nneedle here\n");
  fs.writeFileSync(path.join(tmp, "shared", "held", "h.txt"), "held\n");
  // reading held/ needs the client's approval; quotas charge writes only
  fs.writeFileSync(path.join(tmp, "ask.lua"), `return { name = "hold", check = function(r)
  if r.operation == "read" and r.path:match("^held/") then return "ask", "held by the test" end
  return "allow" end }\n`);
  const file = path.join(tmp, "burrow.yaml");
  fs.writeFileSync(file, "roots: [shared]\n"
    + "policies: [default, ./ask.lua, {name: quotas, max_bytes_written: 1MB}]\n"
    + `state: {url: "redis://127.0.0.1:${rport}/0", timeout: 1s, connect_timeout: 1s}\n` + extra);
  return file;
}


test("HTTP: started with the store down, reads served, the store's calls STORE_UNAVAILABLE, all working once it is up",
  { timeout: 180_000 }, async () => {
    needRedis();
    const tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "burrow-state-down-")));
    let redis, b, b2;
    const sessions = [];
    try {
      const rport = await freePort(); // nobody listens there yet
      b = await startHttp(["--config", config(tmp, rport)]);
      b2 = await startHttp(["--config", path.join(tmp, "burrow.yaml")]); // a second instance of the deployment
      await waitFor(() => /warning: state \(redis:.*cannot connect/.test(b.stderr()), "the warning on stderr");
      assert.equal(b.stderr().match(/warning: state/g).length, 1, b.stderr());
      const ready = await fetch(`http://127.0.0.1:${b.port}/readyz`);
      assert.equal(ready.status, 503, "not ready while the store is down");

      // what needs nothing from the store is served
      const r = (await call(b.url, "read_file", { path: "r.txt" })).result;
      assert.equal(r.isError, undefined, JSON.stringify(r));
      assert.match(text(r), /read me/);
      const st = (await call(b.url, "stat", { path: "r.txt" })).result;
      assert.equal(st.isError, undefined, JSON.stringify(st));
      const g = (await call(b.url, "grep", { pattern: "needle" })).result;
      assert.equal(g.isError, undefined, JSON.stringify(g));
      assert.match(text(g), /r\.txt/);

      // what needs it fails closed, each with the store's code
      const w = (await call(b.url, "write_file", { path: "w.txt", content: "w\n" })).result;
      assert.equal(code(w), "STORE_UNAVAILABLE", JSON.stringify(w));
      assert.match(text(w), /quota: the state store did not answer \(STORE_UNAVAILABLE/);
      assert.ok(!fs.existsSync(path.join(tmp, "shared", "w.txt")));
      const a = (await call(b.url, "read_file", { path: "held/h.txt" })).result;
      assert.equal(code(a), "STORE_UNAVAILABLE", JSON.stringify(a));
      assert.match(text(a), /approval needs the shared state store/);
      const u = (await call(b.url, "undo_edit", { path: "r.txt" })).result;
      assert.equal(code(u), "STORE_UNAVAILABLE", JSON.stringify(u));
      const s0 = await session(b.url);
      assert.ok(s0.err, "a session-era session needs the store: refused");
      assert.match(String(s0.err), /STORE_UNAVAILABLE|503/);

      // the store comes up: no restart of burrow
      redis = await redisOn(tmp, rport).start();
      await waitFor(async () => (await fetch(`http://127.0.0.1:${b.port}/readyz`)).status === 200, "ready once the store answers");
      const w2 = (await call(b.url, "write_file", { path: "w.txt", content: "w\n" })).result;
      assert.equal(w2.isError, undefined, JSON.stringify(w2));
      assert.equal(fs.readFileSync(path.join(tmp, "shared", "w.txt"), "utf8"), "w\n");
      const u2 = (await call(b.url, "undo_edit", { path: "w.txt" })).result;
      assert.equal(u2.isError, undefined, JSON.stringify(u2));
      assert.ok(!fs.existsSync(path.join(tmp, "shared", "w.txt")), "the write taken back");
      const q = (await call(b.url, "read_file", { path: "held/h.txt" })).result;
      assert.equal(q.resultType, "input_required", JSON.stringify(q));
      // answered through the other instance: both got the one key from the store
      const a2 = (await call(b2.url, "read_file", { path: "held/h.txt" }, { inputResponses: YES, requestState: q.requestState })).result;
      assert.equal(a2.isError, undefined, JSON.stringify(a2));
      assert.match(text(a2), /held/);
      const s1 = await session(b.url);
      assert.ok(s1.c, `a session once the store is up: ${s1.err}`);
      sessions.push(s1.c);
      const sr = await s1.c.callTool({ name: "read_file", arguments: { path: "r.txt" } });
      assert.ok(!sr.isError, JSON.stringify(sr));
    } finally {
      for (const c of sessions) await c.close().catch(() => {});
      if (b) await b.stop();
      if (b2) await b2.stop();
      if (redis) await redis.stop();
      fs.rmSync(tmp, { recursive: true, force: true });
    }
  });

test("stdio: started with the store down, reads served, a quota'd write refused, all working once it is up",
  { timeout: 120_000 }, async () => {
    needRedis();
    const tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "burrow-state-down-stdio-")));
    let redis, c;
    try {
      const rport = await freePort();
      const t = new StdioClientTransport({ command: BIN, args: ["mcp", "--config", config(tmp, rport)], stderr: "pipe" });
      let err = "";
      t.stderr.on("data", (d) => { err += d; });
      c = new Client({ name: "state-down-stdio", version: "1" }, { capabilities: {} });
      await c.connect(t);
      const r = await c.callTool({ name: "read_file", arguments: { path: "r.txt" } });
      assert.ok(!r.isError, JSON.stringify(r));
      assert.match(text(r), /read me/);
      await waitFor(() => /warning: state \(redis:.*cannot connect/.test(err), "the warning on stderr");
      const w = await c.callTool({ name: "write_file", arguments: { path: "w.txt", content: "w\n" } });
      assert.equal(code(w), "STORE_UNAVAILABLE", JSON.stringify(w));
      assert.match(text(w), /STORE_UNAVAILABLE/);
      const g = await c.callTool({ name: "grep", arguments: { pattern: "needle" } });
      assert.ok(!g.isError, JSON.stringify(g));

      redis = await redisOn(tmp, rport).start();
      let w2;
      await waitFor(async () => {
        w2 = await c.callTool({ name: "write_file", arguments: { path: "w.txt", content: "w\n" } });
        return !w2.isError;
      }, "a write once the store answers");
      const u2 = await c.callTool({ name: "undo_edit", arguments: { path: "w.txt" } });
      assert.ok(!u2.isError, JSON.stringify(u2));
      assert.ok(!fs.existsSync(path.join(tmp, "shared", "w.txt")));
    } finally {
      if (c) await c.close().catch(() => {});
      if (redis) await redis.stop();
      fs.rmSync(tmp, { recursive: true, force: true });
    }
  });

test("a bad URL or an unreadable password file is still a start-up error", { timeout: 60_000 }, async () => {
  const tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "burrow-state-bad-")));
  try {
    const rport = await freePort();
    for (const [state, want] of [
      [`{url: "redis://127.0.0.1:${rport}/x"}`, /state \(redis:.*URL/],
      [`{url: "redis://127.0.0.1:${rport}/0", password_file: ${JSON.stringify(path.join(tmp, "absent"))}}`, /password file/],
    ]) {
      fs.mkdirSync(path.join(tmp, "shared"), { recursive: true });
      fs.writeFileSync(path.join(tmp, "bad.yaml"), `roots: [shared]\nstate: ${state}\n`);
      for (const args of [["mcp", "--config", path.join(tmp, "bad.yaml"), "--http", "127.0.0.1:0"],
        ["mcp", "--strict-start", "--config", path.join(tmp, "bad.yaml")]]) {
        const out = await runToEnd(args);
        assert.notEqual(out.code, 0, `${args.join(" ")}: ${out.stderr}`);
        assert.match(out.stderr, want);
      }
    }
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});
