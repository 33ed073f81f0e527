// Issue 26: any worker serves any session, tenants in turn, each under its
// cap of calls running at once; a session's state (log level, packs'
// state, undo store) travels with it to the worker that serves it next;
// a tenant's undo budget holds across its sessions. Shown by states, never
// by times: calls parked on an approval the test holds keep their workers
// busy for as long as the test needs.
//
//   cd test/e2e && npm ci && node --test scheduler.test.mjs

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema, LoggingMessageNotificationSchema, ResourceUpdatedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { startHttp, waitFor } from "./http_helpers.mjs";

const T = { timeout: 90_000 };
let TMP;
let counter = 0;
const servers = [];
const sha = (s) => crypto.createHash("sha256").update(s).digest("hex");

before(() => { TMP = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "burrow-sched-"))); });
after(async () => {
  for (const s of servers) await s.stop();
  if (TMP) fs.rmSync(TMP, { recursive: true, force: true });
});

// A policy that asks before any write under hold/.
const ASK = `return { name = "hold", check = function(r)
  if r.operation == "write" and r.path:match("^hold/") then return "ask", "held by the test" end
  return "allow" end }\n`;

function setup(files) {
  const dir = path.join(TMP, `s${++counter}`);
  for (const [rel, body] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
    fs.writeFileSync(path.join(dir, rel), body);
  }
  return dir;
}

async function client(url, token, caps = {}) {
  const headers = token ? { authorization: `Bearer ${token}` } : {};
  const c = new Client({ name: "sched", version: "1" }, { capabilities: caps });
  await c.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
  return c;
}

// A client whose approvals the test holds: park() starts a write under
// hold/ and resolves once the server has asked (the call then holds its
// worker); release() approves it; done is the call's result.
async function holder(url, token) {
  const c = await client(url, token, { elicitation: {} });
  let asked, release;
  const askedP = new Promise((r) => { asked = r; });
  const held = new Promise((r) => { release = r; });
  c.setRequestHandler(ElicitRequestSchema, async () => { asked(); await held; return { action: "accept", content: { approve: true } }; });
  return {
    c,
    async park(name) {
      this.done = c.callTool({ name: "write_file", arguments: { path: `hold/${name}`, content: "held\n" } }, undefined, { timeout: 80_000 });
      await askedP;
    },
    release,
  };
}

const text = (r) => r.content.map((b) => b.text).join("");

test("a session's state travels with it to another worker: log level, packs' state, undo store", T, async () => {
  const dir = setup({ "ws/a.txt": "a\n", "ws/b.txt": "v0\n", "ask.lua": ASK });
  fs.mkdirSync(path.join(dir, "ws/hold"));
  fs.writeFileSync(path.join(dir, "burrow.yaml"),
    "roots: [ws]\npacks: [native, claude_code]\npolicies: [./ask.lua]\nhttp: {workers: 2}\n");
  const s = await startHttp(["--config", path.join(dir, "burrow.yaml")]);
  servers.push(s);
  // in this order: the per-worker pinning this replaces put S on P1's worker
  const p1 = await holder(s.url);
  const p2 = await holder(s.url);
  const S = await client(s.url);
  const logs = [];
  S.setNotificationHandler(LoggingMessageNotificationSchema, (n) => { logs.push(n.params); });
  await S.setLoggingLevel("info");

  await p1.park("1"); // holds worker X
  // S runs on the other worker, Y: it reads a.txt (claude_code's record)
  // and changes b.txt twice (two undo records)
  const ws = path.join(dir, "ws");
  assert.equal((await S.callTool({ name: "Read", arguments: { file_path: path.join(ws, "a.txt") } })).isError, undefined);
  assert.equal((await S.callTool({ name: "write_file", arguments: { path: "b.txt", content: "v1\n" } })).isError, undefined);
  assert.equal((await S.callTool({ name: "write_file", arguments: { path: "b.txt", content: "v2\n" } })).isError, undefined);
  await p2.park("2"); // holds Y, the only worker free
  p1.release();       // X is free once P1's call is over
  assert.equal((await p1.done).isError, undefined);

  // S's next calls can only run on X: its state came along
  const w = await S.callTool({ name: "Write", arguments: { file_path: path.join(ws, "a.txt"), content: "A\n" } });
  assert.equal(w.isError, undefined, `claude_code's read record travelled: ${text(w)}`);
  assert.equal(fs.readFileSync(path.join(ws, "a.txt"), "utf8"), "A\n");
  const u = await S.callTool({ name: "undo_edit", arguments: { path: "b.txt" } });
  assert.equal(u.isError, undefined, `the undo store travelled: ${text(u)}`);
  assert.equal(fs.readFileSync(path.join(ws, "b.txt"), "utf8"), "v1\n");
  assert.equal(u.structuredContent.remaining, 1);
  const before = logs.length;
  // S cannot be asked (no elicitation): the write is refused, a warning line
  const d = await S.callTool({ name: "write_file", arguments: { path: "hold/s.txt", content: "s\n" } });
  assert.equal(d._meta?.["burrow/code"], "POLICY_DENIED", text(d));
  assert.ok(logs.slice(before).some((l) => l.level === "warning"),
    `the log level travelled: ${JSON.stringify(logs.slice(before))}`);

  p2.release();
  assert.equal((await p2.done).isError, undefined);
  for (const c of [p1.c, p2.c, S]) await c.close();
});

test("a session's subscriptions travel too: its calls and its changes are served by any worker", T, async () => {
  const dir = setup({ "ws/w.txt": "v1\n", "ws/r.txt": "read me\n", "ask.lua": ASK });
  fs.mkdirSync(path.join(dir, "ws/hold"));
  fs.writeFileSync(path.join(dir, "burrow.yaml"), "roots: [ws]\npolicies: [./ask.lua]\nhttp: {workers: 2}\n");
  const s = await startHttp(["--config", path.join(dir, "burrow.yaml")]);
  servers.push(s);
  const p1 = await holder(s.url);
  const p2 = await holder(s.url);
  const S = await client(s.url);
  const updated = [];
  S.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => { updated.push(n.params.uri); });
  const uri = `file://${path.join(dir, "ws/w.txt")}`;
  await p1.park("1");                  // holds worker X
  await S.subscribeResource({ uri });  // on Y: S's watcher is made there
  await p2.park("2");                  // holds Y
  p1.release();
  assert.equal((await p1.done).isError, undefined); // X is free
  // S's call and its file's change can only be served on X
  assert.match(text(await S.callTool({ name: "read_file", arguments: { path: "r.txt" } })), /read me/);
  fs.writeFileSync(path.join(dir, "ws/w.txt"), "v2\n");
  await waitFor(() => updated.includes(uri), "the change to reach the client while Y is held");
  await S.unsubscribeResource({ uri });
  p2.release();
  assert.equal((await p2.done).isError, undefined);
  for (const c of [p1.c, p2.c, S]) await c.close();
});

test("no tenant waits behind another's parked calls, nor a session behind its tenant's other session", T, async () => {
  const dir = setup({ "ws/r.txt": "read me\n", "other/o.txt": "other\n", "ask.lua": ASK });
  fs.mkdirSync(path.join(dir, "ws/hold"));
  fs.writeFileSync(path.join(dir, "other.yaml"), "roots: [other]\n");
  fs.writeFileSync(path.join(dir, "burrow.yaml"), [
    "roots: [ws]",
    "policies: [./ask.lua]",
    "http:",
    "  workers: 3", // two tenants: each runs at most 2 calls at once (http.max_running)
    "  tenants:",
    "    b: {config: other.yaml}",
    "  tokens:",
    `    - {sha256: ${sha("tok-a")}}`,
    `    - {sha256: ${sha("tok-b")}, tenant: b}`,
    "",
  ].join("\n"));
  const s = await startHttp(["--config", path.join(dir, "burrow.yaml")]);
  servers.push(s);
  // in this order the per-worker pinning put A3 on A1's worker
  const a1 = await holder(s.url, "tok-a");
  const a2 = await holder(s.url, "tok-a");
  const b1 = await client(s.url, "tok-b");
  const a3 = await client(s.url, "tok-a");
  const read = (c, p) => c.callTool({ name: "read_file", arguments: { path: p } });

  await a1.park("1");
  // A's own other session is served while A's first call is parked
  assert.match(text(await read(a3, "r.txt")), /read me/);
  await a2.park("2"); // A now runs its 2 calls at once: its cap
  // B is served on the third worker
  assert.match(text(await read(b1, "o.txt")), /other/);
  // A's third call waits for one of A's to end, then runs
  const waiting = read(a3, "r.txt");
  assert.match(text(await read(b1, "o.txt")), /other/, "B is still served meanwhile");
  a1.release();
  assert.match(text(await waiting), /read me/);
  a2.release();
  assert.equal((await a1.done).isError, undefined);
  assert.equal((await a2.done).isError, undefined);
  for (const c of [a1.c, a2.c, b1, a3]) await c.close();
});

test("a tenant's undo budget holds across its sessions; the one that cannot fit says so", T, async () => {
  const big = "x".repeat(80) + "\n";
  const dir = setup({ "ws/one.txt": big, "ws/two.txt": big });
  fs.writeFileSync(path.join(dir, "burrow.yaml"), "roots: [ws]\nhttp: {max_undo_bytes: 100}\n");
  const s = await startHttp(["--config", path.join(dir, "burrow.yaml")]);
  servers.push(s);
  const c1 = await client(s.url);
  const c2 = await client(s.url);
  assert.equal((await c1.callTool({ name: "write_file", arguments: { path: "one.txt", content: "1\n" } })).isError, undefined);
  assert.equal((await c2.callTool({ name: "write_file", arguments: { path: "two.txt", content: "2\n" } })).isError, undefined);
  // the second session's 81 bytes do not fit beside the first's 81
  const u2 = await c2.callTool({ name: "undo_edit", arguments: { path: "two.txt" } });
  assert.equal(u2.isError, true);
  assert.equal(u2._meta["burrow/code"], "TOO_LARGE");
  assert.match(text(u2), /undo budget/);
  assert.equal(fs.readFileSync(path.join(dir, "ws/two.txt"), "utf8"), "2\n");
  // the first session's record was not taken by the second
  const u1 = await c1.callTool({ name: "undo_edit", arguments: { path: "one.txt" } });
  assert.equal(u1.isError, undefined, text(u1));
  assert.equal(fs.readFileSync(path.join(dir, "ws/one.txt"), "utf8"), big);
  // a session's end gives its bytes back: the next session's record fits
  assert.equal((await c1.callTool({ name: "write_file", arguments: { path: "one.txt", content: "1\n" } })).isError, undefined);
  await c1.transport.terminateSession(); // DELETE: it held 81 bytes of the budget
  await c1.close();
  const c3 = await client(s.url);
  await waitFor(async () => { // the close is handled by a worker: wait for that state
    assert.equal((await c3.callTool({ name: "write_file", arguments: { path: "two.txt", content: big } })).isError, undefined);
    assert.equal((await c3.callTool({ name: "write_file", arguments: { path: "two.txt", content: "3\n" } })).isError, undefined);
    const u3 = await c3.callTool({ name: "undo_edit", arguments: { path: "two.txt" } });
    return u3.isError === undefined;
  }, "the budget to come back when the first session ended", 30_000, 50);
  for (const c of [c2, c3]) await c.close();
});
