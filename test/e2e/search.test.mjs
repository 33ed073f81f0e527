// End-to-end: grep and glob over MCP stdio with a raw JSON-RPC client, and
// notifications/cancelled stopping a long grep (P1-13: "a grep stops
// within 100 ms of notifications/cancelled"). Timing here is only ever
// compared with the same search run to the end on the same machine: the
// cancelled reply must arrive well before the full run would have.
//
// The server during one long call (issue 11): ping answered meanwhile, a
// cancel and the search budget stopping a backtracking grep inside one
// file. The target is 100 ms; the assertions allow far more (the machine
// may be loaded) but stay far below the minutes the call would run
// unstopped, and the measured figures are printed.
//
//   cd test/e2e && node --test search.test.mjs

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { waitFor } from "./http_helpers.mjs";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const REPO = path.resolve(HERE, "..", "..");
const BIN = path.resolve(process.env.BURROW_BIN || path.join(REPO, "build", "burrow"));
const T = { timeout: 120_000 };
// no digits in the data: every position is tried and fails, slowly
const SLOW = "(?:[a-z]+\\s+){1,40}[0-9]";

let TMP;
before(() => {
  TMP = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "burrow-e2e-search-")));
});
after(() => {
  if (TMP) fs.rmSync(TMP, { recursive: true, force: true });
});

/** A raw client: send objects, await replies by id, see notifications. */
function server(root, extra = []) {
  const child = spawn(BIN, ["mcp", "--root", root, ...extra], { stdio: ["pipe", "pipe", "inherit"] });
  const waiting = new Map();
  const notes = [];
  let buf = "";
  child.stdout.on("data", (d) => {
    buf += d;
    let i;
    while ((i = buf.indexOf("\n")) >= 0) {
      const msg = JSON.parse(buf.slice(0, i));
      buf = buf.slice(i + 1);
      if (msg.id !== undefined && waiting.has(msg.id)) {
        waiting.get(msg.id)({ msg, at: performance.now() });
        waiting.delete(msg.id);
      } else notes.push(msg);
    }
  });
  const send = (m) => child.stdin.write(JSON.stringify({ jsonrpc: "2.0", ...m }) + "\n");
  const request = (id, method, params) => {
    const p = new Promise((resolve) => waiting.set(id, resolve));
    send({ id, method, params });
    return p;
  };
  const close = () => new Promise((resolve) => {
    child.on("exit", resolve);
    child.stdin.end();
  });
  // raw bytes (a message in pieces), and the reply to an id sent that way
  const raw = (text) => child.stdin.write(text);
  const expect = (id) => new Promise((resolve) => waiting.set(id, resolve));
  return { send, request, close, notes, raw, expect };
}

async function init(s) {
  await s.request(0, "initialize", {
    protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "search-e2e", version: "1" },
  });
  s.send({ method: "notifications/initialized" });
}

function slowTree() {
  const dir = path.join(TMP, "slow");
  fs.mkdirSync(dir, { recursive: true });
  const words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "theta", "kappa"];
  const line = Array.from({ length: 12 }, (_, i) => words[(i * 5) % words.length]).join(" ") + "\n";
  const blob = line.repeat(4000);
  for (let i = 0; i < 150; i++) fs.writeFileSync(path.join(dir, `f${String(i).padStart(3, "0")}.txt`), blob);
  return dir;
}

test("grep and glob answer over MCP with text and structuredContent", T, async () => {
  const dir = path.join(TMP, "small");
  fs.mkdirSync(path.join(dir, "src"), { recursive: true });
  fs.writeFileSync(path.join(dir, "src", "a.c"), "int main(void)\n{\n  return 0;\n}\n");
  const s = server(dir);
  await init(s);
  const g = (await s.request(1, "tools/call", { name: "grep", arguments: { pattern: "return \\d" } })).msg;
  assert.equal(g.result.isError, undefined);
  assert.equal(g.result.content[0].text, "src/a.c:3:  return 0;");
  assert.deepEqual(g.result.structuredContent.matches, [{ path: "src/a.c", line: 3, text: "  return 0;" }]);
  const m = (await s.request(2, "tools/call", { name: "glob", arguments: { pattern: "**/*.c" } })).msg;
  assert.equal(m.result.content[0].text, "src/a.c");
  const bad = (await s.request(3, "tools/call", { name: "grep", arguments: { pattern: "a(" } })).msg;
  assert.equal(bad.result.isError, true);
  assert.equal(bad.result._meta["burrow/code"], "INVALID_ARGUMENT");
  await s.close();
});

test("notifications/cancelled stops a long grep well before it would end", T, async () => {
  const dir = slowTree();
  // the search's time budget far above its run on any load: the full run
  // must search all 150 files (at the default 30 s a loaded machine cut it)
  const s = server(dir, ["--cap", "max_search_ms=600000"]);
  await init(s);
  // the same search run to the end: what "well before" is measured against
  let t0 = performance.now();
  const full = await s.request(1, "tools/call", { name: "grep", arguments: { pattern: SLOW } });
  const fullMs = full.at - t0;
  assert.equal(full.msg.result.structuredContent.cancelled, false);
  assert.equal(full.msg.result.structuredContent.files_searched, 150);

  t0 = performance.now();
  let answered = false;
  const pending = s.request(2, "tools/call", {
    name: "grep", arguments: { pattern: SLOW }, _meta: { progressToken: "p2" },
  });
  pending.then(() => { answered = true; });
  // a state, not a time: the search is running once it reports progress
  await waitFor(() => answered || progressOf(s, "p2").length > 0, "the search's first progress report");
  assert.equal(answered, false, `the search ended before its first progress report (the full run took ${fullMs.toFixed(0)} ms)`);
  const cancelAt = performance.now();
  s.send({ method: "notifications/cancelled", params: { requestId: 2, reason: "test" } });
  const got = await pending;
  const afterCancel = got.at - cancelAt;
  const r = got.msg.result.structuredContent;
  assert.equal(r.cancelled, true, "the reply says the search was cancelled");
  assert.equal(r.truncated, true);
  assert.ok(r.files_searched < 150, `stopped early (${r.files_searched} of 150 files)`);
  assert.ok(afterCancel < fullMs / 2,
    `reply ${afterCancel.toFixed(0)} ms after the cancel; the full run took ${fullMs.toFixed(0)} ms`);
  assert.match(got.msg.result.content[0].text, /search cancelled/);

  // the server goes on serving, and the next call is not cancelled
  const next = await s.request(3, "tools/call", { name: "grep", arguments: { pattern: "alpha", output_mode: "count" } });
  assert.equal(next.msg.result.structuredContent.cancelled, false);
  assert.equal(next.msg.result.structuredContent.counts.length, 150);
  await s.close();
});

// The progress reports of a call with a progressToken so far.
function progressOf(s, token) {
  return s.notes.filter((n) => n.method === "notifications/progress" && n.params.progressToken === token);
}

// The first progress report of a call with a progressToken: a state to
// wait for (the call is running), never a time.
function firstProgress(s, token) {
  return waitFor(() => progressOf(s, token)[0], `progress of ${token}`, 60_000, 10);
}

// Until the call reports progress k more times (its walk reports every
// 100 ms and, being read-only, serves what arrived meanwhile right after
// each report): a state, a step of the call itself.
async function moreProgress(s, token, k = 1) {
  const n = progressOf(s, token).length;
  await waitFor(() => progressOf(s, token).length >= n + k, `${k} more progress of ${token}`, 60_000, 10);
}

test("a long grep with a progressToken sends progress notifications", T, async () => {
  // a grep that runs for minutes: its reports (every 100 ms) must come
  const s = server(backtrackTree());
  await init(s);
  const pending = s.request(1, "tools/call", { name: "grep", arguments: { pattern: BACKTRACK }, _meta: { progressToken: "tok" } });
  const p = await firstProgress(s, "tok");
  assert.equal(p.params.progressToken, "tok");
  assert.equal(typeof p.params.progress, "number");
  s.send({ method: "notifications/cancelled", params: { requestId: 1, reason: "enough" } });
  assert.equal((await pending).msg.result.structuredContent.cancelled, true);
  await s.close();
});

// One 1.1 MB file of lines "aaaaaaaaaaaaaaaaaaaab": (a+)+$ fails on each
// after ~2^20 steps, under PCRE2's match limit, so nothing errors and the
// whole file takes minutes; it has no literal, so PCRE2 runs over 1 MiB
// windows, where a cancel was only seen at a window's end.
const BACKTRACK = "(a+)+$";
function backtrackTree() {
  const dir = path.join(TMP, "backtrack");
  if (!fs.existsSync(dir)) {
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, "slow.txt"), ("a".repeat(20) + "b\n").repeat(50000));
  }
  return dir;
}

test("ping, lists and reads are answered at once while a long grep runs, writes wait their turn, and the grep stops on notifications/cancelled", T, async () => {
  const s = server(backtrackTree());
  await init(s);
  let grepDone = false;
  const pending = s.request(1, "tools/call", { name: "grep", arguments: { pattern: BACKTRACK }, _meta: { progressToken: "g" } });
  pending.then(() => { grepDone = true; });
  await firstProgress(s, "g"); // a state: the grep is running
  const waits = [];
  for (let i = 0; i < 5; i++) {
    const t0 = performance.now();
    const pong = await s.request(100 + i, "ping");
    waits.push(pong.at - t0);
    assert.deepEqual(pong.msg.result, {});
    await moreProgress(s, "g"); // each ping at another point of the grep
  }
  assert.equal(grepDone, false, "the grep was still running: the pings were answered during it");
  console.log(`ping during a long grep: ${waits.map((w) => w.toFixed(1)).join(", ")} ms (target 100 ms)`);
  for (const w of waits) assert.ok(w < 1000, `ping took ${w.toFixed(0)} ms during the call`);

  // other requests are answered meanwhile too: a list, a read-only tool
  const t1 = performance.now();
  const list = await s.request(2, "tools/list", {});
  const read = await s.request(3, "tools/call", { name: "read_file", arguments: { path: "slow.txt", limit: 1 } });
  console.log(`tools/list and read_file during a long grep: ${(list.at - t1).toFixed(1)}, ${(read.at - list.at).toFixed(1)} ms`);
  assert.equal(grepDone, false, "the grep was still running: the list and the read were answered during it");
  assert.ok(Array.isArray(list.msg.result.tools));
  assert.match(read.msg.result.content[0].text, /aaaab/);
  // a tool that writes waits its turn, and so does everything sent after it
  let early = 0;
  const write = s.request(4, "tools/call", { name: "write_file", arguments: { path: "w.txt", content: "w\n" } });
  const after = s.request(5, "tools/call", { name: "read_file", arguments: { path: "w.txt" } });
  write.then(() => { if (!grepDone) early++; });
  after.then(() => { if (!grepDone) early++; });
  // a state, not a time: a ping sent after them is answered at once (by the
  // stdin reader, during the call) once the two are queued; the next
  // progress report is followed by the serving of what waits, and the one
  // after it comes once that is done, so an answer given then to the write
  // or the read would be in by now
  assert.deepEqual((await s.request(6, "ping")).msg.result, {});
  await moreProgress(s, "g", 2);
  assert.equal(grepDone, false);
  assert.equal(early, 0, "the write, and the read sent after it, were answered during the call");
  // the cancel is seen inside the file
  const cancelAt = performance.now();
  s.send({ method: "notifications/cancelled", params: { requestId: 1, reason: "test" } });
  const got = await pending;
  const afterCancel = got.at - cancelAt;
  console.log(`grep reply ${afterCancel.toFixed(1)} ms after notifications/cancelled (target 100 ms)`);
  assert.ok(afterCancel < 5000, `the grep answered ${afterCancel.toFixed(0)} ms after the cancel`);
  const r = got.msg.result.structuredContent;
  assert.equal(r.cancelled, true);
  assert.equal(r.truncated, true);
  const w = await write, r2 = await after;
  assert.ok(w.at >= got.at, "the write is answered after the call");
  assert.ok(r2.at >= w.at, "the read sent after the write is answered after it");
  assert.match(r2.msg.result.content[0].text, /w/);
  await s.close();
});

test("a tiny max_search_ms ends a backtracking grep with a LIMIT result", T, async () => {
  const s = server(backtrackTree(), ["--cap", "max_search_ms=200"]);
  await init(s);
  const t0 = performance.now();
  const got = await s.request(1, "tools/call", { name: "grep", arguments: { pattern: BACKTRACK } });
  const ms = got.at - t0;
  console.log(`grep with max_search_ms=200 answered after ${ms.toFixed(0)} ms`);
  assert.ok(ms < 10000, `${ms.toFixed(0)} ms: the budget did not bound the search`);
  const res = got.msg.result;
  assert.equal(res.isError, undefined);
  assert.equal(res.structuredContent.limit, "time");
  assert.equal(res.structuredContent.truncated, true);
  assert.equal(res.structuredContent.cancelled, false);
  assert.match(res.content[0].text, /\[LIMIT time: the search stopped at max_search_ms=200/);
  await s.close();
});

test("with the official SDK client: ping during a long callTool, and an AbortSignal stops it", T, async () => {
  const transport = new StdioClientTransport({ command: BIN, args: ["mcp", "--root", backtrackTree()], stderr: "inherit" });
  const client = new Client({ name: "search-e2e-sdk", version: "1" }, { capabilities: {} });
  await client.connect(transport);
  try {
    const abort = new AbortController();
    const t0 = performance.now();
    let reported = false;
    const call = client.callTool({ name: "grep", arguments: { pattern: BACKTRACK } }, undefined,
      { signal: abort.signal, timeout: 120_000, onprogress: () => { reported = true; } });
    const outcome = call.then(() => "answered", (e) => e);
    let settled = false;
    outcome.then(() => { settled = true; });
    // a state, not a time: the call is running once it reports progress
    await waitFor(() => reported || settled, "the call's first progress report");
    assert.equal(settled, false, "the call was still running");
    const p0 = performance.now();
    await client.ping();
    const pingMs = performance.now() - p0;
    console.log(`SDK ping during a long callTool: ${pingMs.toFixed(1)} ms`);
    assert.ok(pingMs < 1000, `ping took ${pingMs.toFixed(0)} ms`);
    abort.abort("enough");
    const e = await outcome;
    assert.notEqual(e, "answered");
    // the server is free again soon: the next call is answered at once
    const next = await client.callTool({ name: "grep", arguments: { pattern: "zzz", literal: true } });
    const total = performance.now() - t0;
    console.log(`SDK: the next call answered ${total.toFixed(0)} ms after the first began`);
    assert.ok(total < 10000, `${total.toFixed(0)} ms: the aborted grep kept the server busy`);
    assert.equal(next.structuredContent.cancelled, false);
  } finally {
    await client.close();
  }
});

// stdin changes hands (lserver.c): the Lua thread reads it between calls,
// the reader thread once a call has run 2 ms, and io:finish takes it back.
// A message cut across those hand-overs, a burst of pipelined small calls
// with pings between them, and a cancel in pieces must all come out whole,
// once each, tools in the order sent.
test("messages split across stdin's hand-overs between threads arrive whole, once, in order", T, async () => {
  const s = server(backtrackTree());
  await init(s);
  const msg = (id, method, params) => JSON.stringify({ jsonrpc: "2.0", id, method, params }) + "\n";
  // a burst of small calls, each far under 2 ms, pings between, one write
  let burst = "";
  const ids = [];
  for (let i = 0; i < 200; i++) {
    burst += msg(1000 + i, "tools/call", { name: "read_file", arguments: { path: "slow.txt", limit: 1 } });
    ids.push(1000 + i);
    if (i % 10 === 0) { burst += msg(5000 + i, "ping"); ids.push(5000 + i); }
  }
  const replies = ids.map((id) => s.expect(id));
  s.raw(burst);
  const got = await Promise.all(replies);
  for (const g of got) assert.equal(g.msg.error, undefined);
  const reads = got.filter((g) => g.msg.id < 5000);
  for (let i = 1; i < reads.length; i++) assert.ok(reads[i].at >= reads[i - 1].at, "tool replies in the order sent");
  for (const g of reads) assert.match(g.msg.result.content[0].text, /aaaab/);

  // A piece is known read once a ping sent whole before it, in the same
  // write (a few hundred bytes: one pipe write, read whole), is answered;
  // the next piece is then sent, so it comes in a read of its own. (rest:
  // what ends the line cut before, ahead of the ping)
  const pieceRead = async (id, rest, piece) => {
    const pong = s.expect(id);
    s.raw(rest + msg(id, "ping") + piece);
    assert.deepEqual((await pong).msg.result, {});
  };
  // a long call; a ping whose first half the Lua thread may read and whose
  // rest the reader thread reads after it took over
  const long = s.request(1, "tools/call", { name: "grep", arguments: { pattern: BACKTRACK }, _meta: { progressToken: "h" } });
  const ping = msg(2, "ping");
  const pong = s.expect(2);
  s.raw(ping.slice(0, 10));
  // a state, not a time: the call reports progress (100 ms in), long past
  // the 2 ms after which the reader thread has stdin
  await firstProgress(s, "h");
  s.raw(ping.slice(10));
  assert.deepEqual((await pong).msg.result, {}, "the ping cut across the hand-over is answered during the call");
  // a write (it waits its turn) cut in two: half now, from the reader thread
  const write = msg(3, "tools/call", { name: "write_file", arguments: { path: "w.txt", content: "whole\n" } });
  const wrote = s.expect(3);
  await pieceRead(6, "", write.slice(0, 25));
  // the cancel in two pieces too
  const cancel = JSON.stringify({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 1 } }) + "\n";
  await pieceRead(7, write.slice(25), cancel.slice(0, 30));
  s.raw(cancel.slice(30));
  const done = await long;
  assert.equal(done.msg.result.structuredContent.cancelled, true);
  // stdin is back with the Lua thread: the rest of a message it did not start
  const read = msg(4, "tools/call", { name: "read_file", arguments: { path: "w.txt" } });
  const readBack = s.expect(4);
  await pieceRead(8, "", read.slice(0, 17));
  s.raw(read.slice(17));
  const w = await wrote, r = await readBack;
  assert.equal(w.msg.error, undefined);
  assert.ok(w.at >= done.at, "the write waited for the long call");
  assert.match(r.msg.result.content[0].text, /whole/);
  assert.equal(s.notes.filter((n) => n.id !== undefined).length, 0, "no reply to an id we did not wait for");
  await s.close();
});
