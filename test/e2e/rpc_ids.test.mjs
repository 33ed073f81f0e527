// Issue 26: one answer path for ping and one request-id comparison for
// notifications/cancelled, on both transports (host/src/server/rpcid.c).
// A ping with a 500-byte id, a 64 KiB id, numbers and escaped strings gets
// the same parsed reply over stdio and HTTP (at b663a06 HTTP cut a long id
// into invalid JSON); a cancel whose requestId is a long string full of
// escapes stops the call over both (at b663a06 stdio matched no id over
// 256 bytes; HTTP compared the JSON texts two encoders wrote, which agreed
// on these, and now compares values as stdio does).
//
//   cd test/e2e && npm ci && node --test rpc_ids.test.mjs

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import readline from "node:readline";
import { startHttp, initBody, HEADERS, BIN, sseEvents } from "./http_helpers.mjs";

const T = { timeout: 120_000 };
let TMP;
const stops = [];
before(() => {
  TMP = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "burrow-rpcid-")));
  // (a+)+$ on lines of a's ending in b: minutes of backtracking unless cancelled
  fs.writeFileSync(path.join(TMP, "slow.txt"), ("a".repeat(20) + "b\n").repeat(50000));
});
after(async () => {
  for (const s of stops) await s();
  if (TMP) fs.rmSync(TMP, { recursive: true, force: true });
});

const IDS = [
  "x".repeat(500),
  "y".repeat(64 * 1024),
  7,
  -12,
  1.5,
  'quote" back\\ slash/ tab\t nl\n ctl\u0001 é ☃ 🦫',
];
const LONG_CANCEL_ID = "cancel-me " + '"\\/\u0001é'.repeat(60) + "z".repeat(300);
const SLOW_GREP = { name: "grep", arguments: { pattern: "(a+)+$", path: "." } };

// stdio: a burrow mcp with a line reader; send(obj), next(pred) -> message
function stdio() {
  const proc = spawn(BIN, ["mcp", "--root", TMP], { stdio: ["pipe", "pipe", "ignore"] });
  const queue = [], waiters = [];
  readline.createInterface({ input: proc.stdout }).on("line", (l) => {
    const m = JSON.parse(l);
    const w = waiters.findIndex((x) => x.pred(m));
    if (w >= 0) waiters.splice(w, 1)[0].resolve(m); else queue.push(m);
  });
  stops.push(() => new Promise((r) => { if (proc.exitCode !== null) return r(); proc.on("exit", r); proc.stdin.end(); }));
  return {
    send: (o) => proc.stdin.write(JSON.stringify(o) + "\n"),
    next: (pred) => new Promise((resolve) => {
      const i = queue.findIndex(pred);
      if (i >= 0) return resolve(queue.splice(i, 1)[0]);
      waiters.push({ pred, resolve });
    }),
  };
}

const sameId = (id) => (m) => m.id !== undefined && JSON.stringify(m.id) === JSON.stringify(id);

async function stdioInit() {
  const s = stdio();
  s.send(JSON.parse(initBody(0)));
  await s.next(sameId(0));
  s.send({ jsonrpc: "2.0", method: "notifications/initialized" });
  return s;
}

async function httpInit() {
  const srv = await startHttp(["--root", TMP]);
  stops.push(srv.stop);
  const r = await fetch(srv.url, { method: "POST", headers: HEADERS, body: initBody(0) });
  const sid = r.headers.get("mcp-session-id");
  await r.text();
  const h = { ...HEADERS, "mcp-session-id": sid, "mcp-protocol-version": "2025-11-25" };
  await (await fetch(srv.url, { method: "POST", headers: h, body: JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }) })).text();
  const post = async (o) => {
    const res = await fetch(srv.url, { method: "POST", headers: h, body: JSON.stringify(o) });
    if ((res.headers.get("content-type") || "").includes("text/event-stream")) {
      for await (const e of sseEvents(res.body, 100_000)) {
        const m = e.data ? JSON.parse(e.data) : null;
        if (m && m.id !== undefined) return m;
      }
      return null;
    }
    const text = await res.text();
    return text ? JSON.parse(text) : null;
  };
  return { post, url: srv.url, h };
}

test("a ping with any id gets the same parsed reply over stdio and HTTP", T, async () => {
  const s = await stdioInit();
  const h = await httpInit();
  for (const id of IDS) {
    s.send({ jsonrpc: "2.0", id, method: "ping" });
    const a = await s.next(sameId(id));
    const b = await h.post({ jsonrpc: "2.0", id, method: "ping" });
    assert.deepEqual(a, { jsonrpc: "2.0", id, result: {} }, `stdio, id ${String(id).slice(0, 20)}`);
    assert.deepEqual(b, a, `HTTP, id ${String(id).slice(0, 20)}`);
  }
});

test("stdio: a cancel names a long escaped id; a ping with a long id is answered while the call runs", T, async () => {
  const s = await stdioInit();
  s.send({ jsonrpc: "2.0", id: LONG_CANCEL_ID, method: "tools/call", params: SLOW_GREP });
  const pingId = "p".repeat(500);
  s.send({ jsonrpc: "2.0", id: pingId, method: "ping" });
  assert.deepEqual(await s.next(sameId(pingId)), { jsonrpc: "2.0", id: pingId, result: {} });
  s.send({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: LONG_CANCEL_ID } });
  const res = await s.next(sameId(LONG_CANCEL_ID));
  assert.equal(res.result?.structuredContent?.cancelled, true, JSON.stringify(res).slice(0, 400));
});

test("HTTP: a cancel names a long escaped id and stops the call", T, async () => {
  const h = await httpInit();
  const body = JSON.stringify({ jsonrpc: "2.0", id: LONG_CANCEL_ID, method: "tools/call",
    params: { ...SLOW_GREP, _meta: { progressToken: "t" } } });
  const res = await fetch(h.url, { method: "POST", headers: h.h, body });
  let cancelled = false, answer = null;
  // the call's SSE stream: its first progress event says it runs; then
  // the cancel; then its answer
  for await (const e of sseEvents(res.body, 100_000)) {
    const m = e.data ? JSON.parse(e.data) : null;
    if (!m) continue;
    if (m.method === "notifications/progress" && !cancelled) {
      cancelled = true;
      await h.post({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: LONG_CANCEL_ID } });
    }
    if (m.id !== undefined) { answer = m; break; }
  }
  assert.ok(cancelled, "the call reported progress");
  assert.ok(answer, "the call answered");
  assert.equal(answer.id, LONG_CANCEL_ID);
  assert.equal(answer.result?.structuredContent?.cancelled, true, JSON.stringify(answer).slice(0, 400));
});
