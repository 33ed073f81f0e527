// Issue 30: the HTTP server says what an operator needs: one access-log
// line per session opened and closed (and why), per stateless request
// (MCP 2026-07-28), and per refusal with its status, reason, client address
// and tenant (http.access_log: stderr by default, a file, or off).
//
//   cd test/e2e && npm ci && node --test access_log.test.mjs

import { test, after } from "node:test";
import assert from "node:assert/strict";
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { execFileSync } from "node:child_process";
import { startHttp, initBody, HEADERS, waitFor } from "./http_helpers.mjs";

let server, dir;
after(async () => {
  if (server) await server.stop();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

const sha = (s) => crypto.createHash("sha256").update(s).digest("hex");

test("sessions opened and closed, and each refusal, are logged with status, reason and tenant", { timeout: 60_000 }, async () => {
  dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "burrow-access-")));
  fs.mkdirSync(path.join(dir, "ws"));
  fs.mkdirSync(path.join(dir, "other"));
  fs.writeFileSync(path.join(dir, "other.yaml"), "roots: [other]\naudit: audit.jsonl\n");
  fs.writeFileSync(path.join(dir, "other/o.txt"), "o\n");
  fs.writeFileSync(path.join(dir, "burrow.yaml"), [
    "roots: [ws]",
    "http:",
    "  access_log: access.log",
    "  max_body: 1KiB",
    "  tenants:",
    "    acme: {config: other.yaml}",
    "  tokens:",
    `    - {sha256: ${sha("tok-acme")}, tenant: acme, max_sessions: 1}`,
    "",
  ].join("\n"));
  server = await startHttp(["--config", path.join(dir, "burrow.yaml")]);
  const auth = { authorization: "Bearer tok-acme" };
  const post = (headers, body, url = server.url, method = "POST") =>
    fetch(url, { method, headers: { ...HEADERS, ...headers }, body }).then(async (r) => ({ status: r.status, sid: r.headers.get("mcp-session-id"), text: await r.text() }));

  assert.equal((await post({}, initBody(1))).status, 401);
  assert.equal((await post({ ...auth, origin: "https://evil.example" }, initBody(1))).status, 403);
  assert.equal((await post(auth, initBody(1), server.url.replace(/\/mcp$/, "/nope"))).status, 404);
  assert.equal((await post(auth, undefined, server.url, "PUT")).status, 405);
  assert.equal((await post(auth, "x".repeat(4096))).status, 413);
  const ok = await post(auth, initBody(1));
  assert.equal(ok.status, 200);
  assert.equal((await post(auth, initBody(2))).status, 429, "the token's one session is open");
  // a call of the session: its audit record names the tenant
  const h = { ...auth, "mcp-session-id": ok.sid, "mcp-protocol-version": "2025-11-25" };
  assert.equal((await post(h, JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }))).status, 202);
  const call = await post(h, JSON.stringify({ jsonrpc: "2.0", id: 3, method: "tools/call", params: { name: "read_file", arguments: { path: "o.txt" } } }));
  assert.equal(call.status, 200);
  const audit = fs.readFileSync(path.join(dir, "audit.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l));
  assert.ok(audit.some((r) => r.tool === "read_file" && r.tenant === "acme" && r.session === `http:${ok.sid.slice(0, 8)}`),
    JSON.stringify(audit));
  const del = await fetch(server.url, { method: "DELETE", headers: { ...auth, "mcp-session-id": ok.sid, "mcp-protocol-version": "2025-11-25" } });
  assert.equal(del.status, 200);

  // a stateless request (MCP 2026-07-28): one line, its method and tenant
  const st = await post({ ...auth, "mcp-protocol-version": "2026-07-28", "mcp-method": "tools/list" },
    JSON.stringify({ jsonrpc: "2.0", id: 4, method: "tools/list", params: { _meta: {
      "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {} } } }));
  assert.equal(st.status, 200);

  // the log's writer thread writes in order: once the last line is in, all are
  const log = await waitFor(() => {
    const text = fs.readFileSync(path.join(dir, "access.log"), "utf8");
    return /stateless tools\/list/.test(text) && text;
  }, "the stateless request's line in the access log");
  const lines = log.trim().split("\n");
  for (const l of lines) assert.match(l, /^burrow http \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ /, l);
  const has = (re, what) => assert.ok(lines.some((l) => re.test(l)), `${what}:\n${log}`);
  has(/refused 401 addr=127\.0\.0\.1 tenant=-: Unauthorized/, "401, before any token is known");
  has(/refused 403 addr=127\.0\.0\.1 tenant=-: Forbidden/, "403");
  has(/refused 404 addr=127\.0\.0\.1 tenant=acme: Not Found/, "404 with the token's tenant");
  has(/refused 405 addr=127\.0\.0\.1 tenant=acme: Method Not Allowed/, "405");
  has(/refused 413 addr=127\.0\.0\.1 tenant=acme: /, "413");
  has(/refused 429 addr=127\.0\.0\.1 tenant=acme: Too Many Requests: this token has its most sessions open/, "429");
  has(new RegExp(`session ${ok.sid.slice(0, 8)} opened addr=127\\.0\\.0\\.1 tenant=acme`), "the session opened");
  has(new RegExp(`session ${ok.sid.slice(0, 8)} closed \\(deleted\\) tenant=acme`), "and closed, saying why");
  has(/stateless tools\/list addr=127\.0\.0\.1 tenant=acme$/, "a stateless request");
  assert.ok(!log.includes(ok.sid), "never the whole session id");
  assert.ok(!log.includes("tok-acme"), "never a token");
});

// An access log that blocks (a pipe nobody drains: a stalled journal, a
// terminal paused with ^S) must not stop the listener: its lines are queued
// for a writer thread of their own, and none is lost within the bound.
test("a blocked access log stops nothing: refusals and sessions go on, and every line arrives once it drains", { timeout: 90_000 }, async () => {
  const d = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "burrow-access-fifo-")));
  fs.mkdirSync(path.join(d, "ws"));
  const fifo = path.join(d, "access.fifo");
  execFileSync("mkfifo", [fifo]);
  const rd = fs.openSync(fifo, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK); // a reader that never reads (yet)
  fs.writeFileSync(path.join(d, "burrow.yaml"), "roots: [ws]\nhttp:\n  access_log: access.fifo\n");
  const s = await startHttp(["--config", path.join(d, "burrow.yaml")]);
  try {
    // ~1,500 refusals: far more than a pipe holds (64 KiB), each one a line
    const N = 1500;
    for (let i = 0; i < N; i += 100) {
      await Promise.all(Array.from({ length: Math.min(100, N - i) }, () =>
        fetch(s.url.replace(/\/mcp$/, "/nope")).then((r) => r.text())));
    }
    // a session opens and answers while the log is still full
    const r = await fetch(s.url, { method: "POST", headers: HEADERS, body: initBody() });
    assert.equal(r.status, 200);
    assert.ok(r.headers.get("mcp-session-id"));
    await r.text();
    // drained now: every line comes, in one piece
    let text = "";
    const buf = Buffer.alloc(1 << 16);
    while (!/session [0-9a-f]{8} opened/.test(text)) {
      let n = 0;
      try { n = fs.readSync(rd, buf, 0, buf.length, null); } catch (e) { if (e.code !== "EAGAIN") throw e; }
      if (n > 0) text += buf.toString("utf8", 0, n);
      else await new Promise((res) => setImmediate(res));
    }
    const lines = text.split("\n").filter(Boolean);
    assert.equal(lines.filter((l) => / refused 404 /.test(l)).length, N, "every refusal's line arrived");
    assert.ok(lines.every((l) => l.startsWith("burrow http ")), "whole lines only");
    // stuck again, and stopped: the process ends all the same
    for (let i = 0; i < N; i += 100) {
      await Promise.all(Array.from({ length: 100 }, () =>
        fetch(s.url.replace(/\/mcp$/, "/nope")).then((r) => r.text())));
    }
    assert.equal(await s.stop(), 0, "SIGTERM ends it with its access log stuck");
  } finally {
    await s.stop();
    fs.closeSync(rd);
    fs.rmSync(d, { recursive: true, force: true });
  }
});
