// Issue 42: the tree tools as MCP tasks (io.modelcontextprotocol/tasks at
// 2026-07-28) over HTTP with two workers. A recursive copy of 30,000 files
// runs past the moment a call becomes a task (burrow.mcp.tasks' rule, looked
// at from the core's staging every 1024 entries; the cap task_after_ms): its request is answered
// with the CreateTaskResult and its stream ends, the copy goes on, and
// tasks/get gives its result later, with every file at the destination.
// Another copy cancelled mid-way ends cancelled, its staging stopped at the
// next look and rolled back: no destination, no staged tree left beside it.
// Another token can neither read nor cancel either. Raw fetch, as
// tasks.test.mjs (the v2 client has no task helper).
//
//   cd test/e2e && node --test tree_tasks.test.mjs

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { BIN, fastTmpdir, startHttp, taskRequest, waitFor } from "./http_helpers.mjs";

const T = { timeout: 300_000 };
const V = "2026-07-28";
const TOKA = "tree-tasks-token-a-0123456789ab";
const TOKB = "tree-tasks-token-b-0123456789ab";
const sha = (t) => crypto.createHash("sha256").update(t).digest("hex");
const FILES = 30_000, DIRS = 3000; // many directories: each costs the copy more than a file
let TMP, WS, GATE, server;

before(async () => {
  TMP = fastTmpdir("burrow-tree-tasks-");
  WS = path.join(TMP, "ws");
  for (let d = 0; d < DIRS; d++) {
    const dir = path.join(WS, "src", `d${d}`);
    fs.mkdirSync(dir, { recursive: true });
    for (let i = 0; i < FILES / DIRS; i++) fs.writeFileSync(path.join(dir, `f${i}.txt`), `file ${d}/${i}\n`);
  }
  // on tmpfs the copy takes some tenths of a second on an idle machine,
  // less on a fast one: it becomes a task at its first look (after 1024
  // entries: task_after_ms 0, the default 500), the same rule
  fs.writeFileSync(path.join(TMP, "burrow.yaml"), "roots: [ws]\ncaps: {task_after_ms: 0}\n"
    + `http:\n  workers: 2\n  tokens:\n    - {sha256: ${sha(TOKA)}}\n    - {sha256: ${sha(TOKB)}}\n`);
  // under the fault shim: while GATE exists, a change under ws past the
  // 8,000th made meanwhile waits (host/test/faults.c WAIT), so the copy
  // cancelled mid-way is held, a task, until its cancel is in
  GATE = path.join(TMP, "gate");
  server = await startHttp(["--config", path.join(TMP, "burrow.yaml")], { env: {
    LD_PRELOAD: path.join(path.dirname(BIN), "faults.so"), BURROW_FAULT: "any:WAIT:after=8000",
    BURROW_FAULT_DIR: WS, BURROW_FAULT_GATE: GATE } });
});
after(async () => {
  if (server) await server.stop();
  if (TMP) fs.rmSync(TMP, { recursive: true, force: true });
});

let nextId = 1;
/** One stateless request of token tok, declaring the tasks extension, its
 * response body read to its end (the stream closed): its result, or its
 * error as {error}. */
async function rq(method, params, tok = TOKA) {
  return taskRequest(server.url, tok, nextId++, method, params); // read to the stream's end
}

// The JSON-RPC messages of a response body (SSE events or one JSON).
function messages(r, text) {
  if (!(r.headers.get("content-type") || "").includes("text/event-stream")) return [JSON.parse(text)];
  return text.split("\n").filter((l) => l.startsWith("data:") && l.slice(5).trim())
    .map((l) => JSON.parse(l.slice(5)));
}

// The files below dir (recursively), or -1 when dir does not exist.
function files(dir) {
  if (!fs.existsSync(dir)) return -1;
  return fs.readdirSync(dir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).length;
}
// What a staging leaves beside its destination while it runs.
const staged = () => fs.readdirSync(WS).filter((n) => n.startsWith(".burrow-stage."));

async function settled(id) {
  let last;
  await waitFor(async () => {
    last = await rq("tasks/get", { taskId: id });
    return last.status !== "working" && (last.status !== "cancelled" || /the call (stopped|ran)/.test(last.statusMessage || ""));
  }, () => `task ${id} to end (last: ${JSON.stringify(last).slice(0, 300)})`, 240_000, 100);
  return last;
}

test("a 30,000-file copy becomes a task; its stream closes; tasks/get gives the result later, every file in place", T, async () => {
  const created = await rq("tools/call", { name: "copy", arguments: { source: "src", destination: "dst", recursive: true } });
  assert.equal(created.resultType, "task",
    `the copy ended before it became a task (${JSON.stringify(created).slice(0, 300)})`);
  assert.ok(Number.isInteger(created.ttlMs) && created.ttlMs > 0);
  const id = created.taskId;

  // another token of the same tenant: no such task, and its cancel is refused
  assert.equal((await rq("tasks/get", { taskId: id }, TOKB)).error?.code, -32602);
  assert.equal((await rq("tasks/cancel", { taskId: id }, TOKB)).error?.code, -32602);

  const last = await settled(id);
  assert.equal(last.status, "completed", JSON.stringify(last).slice(0, 400));
  const res = last.result;
  assert.ok(res && !res.isError, JSON.stringify(res).slice(0, 400));
  assert.equal(res.structuredContent.files, FILES, JSON.stringify(res.structuredContent));
  assert.equal(res.structuredContent.dirs, DIRS + 1);
  assert.equal(files(path.join(WS, "dst")), FILES, "every file at the destination");
  assert.equal(fs.readFileSync(path.join(WS, "dst", "d2718", "f3.txt"), "utf8"), "file 2718/3\n");
  assert.deepEqual(staged(), [], "nothing staged left beside it");
});

test("a 30,000-file copy cancelled mid-way ends cancelled: its staging stopped and rolled back, no destination", T, async () => {
  fs.writeFileSync(GATE, "held\n"); // the copy waits at its 8,000th change
  const created = await rq("tools/call", { name: "copy", arguments: { source: "src", destination: "dst2", recursive: true } });
  assert.equal(created.resultType, "task",
    `the copy ended before it became a task (${JSON.stringify(created).slice(0, 300)})`);
  const id = created.taskId;
  // the copy runs: its staged tree beside the destination holds files
  await waitFor(() => staged().some((n) => files(path.join(WS, n)) > 0), "the copy's staged tree to fill", 60_000, 20);
  const ack = await rq("tasks/cancel", { taskId: id });
  assert.equal(ack.resultType, "complete", JSON.stringify(ack));
  fs.rmSync(GATE); // cancelled: the copy goes on to its next look
  const last = await settled(id);
  assert.equal(last.status, "cancelled", JSON.stringify(last));
  // its worker wrote that the call stopped at a look (not: ran to its end)
  assert.match(last.statusMessage, /stopped at its next check/);
  assert.equal(last.result, undefined, "a cancelled task keeps no partial result");
  assert.equal(fs.existsSync(path.join(WS, "dst2")), false, "nothing at the destination");
  assert.deepEqual(staged(), [], "the staged copy was removed");
  assert.equal(files(path.join(WS, "src")), FILES, "the source untouched");
  // both workers serve again: a small copy ends (a task too at task_after_ms 0)
  const quick = await rq("tools/call", { name: "copy", arguments: { source: "src/d0", destination: "one", recursive: true } });
  const done = quick.resultType === "task" ? await settled(quick.taskId) : quick;
  assert.ok(done.resultType === "complete" || done.status === "completed", JSON.stringify(done).slice(0, 300));
  assert.equal(files(path.join(WS, "one")), FILES / DIRS);
});

test("without the extension the copy is a plain call, answered with its result", T, async () => {
  const id = nextId++;
  const r = await fetch(server.url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream",
      "mcp-protocol-version": V, "mcp-method": "tools/call", "mcp-name": "copy", authorization: `Bearer ${TOKA}` },
    body: JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call", params: { name: "copy",
      arguments: { source: "src/d1", destination: "plain", recursive: true },
      _meta: { "io.modelcontextprotocol/protocolVersion": V, "io.modelcontextprotocol/clientCapabilities": {} } } }),
  });
  const text = await r.text();
  const msg = messages(r, text).find((m) => m.id === id);
  assert.ok(msg && msg.result, text.slice(0, 300));
  assert.equal(msg.result.taskId, undefined);
  assert.equal(msg.result.structuredContent.files, FILES / DIRS);
  assert.equal(files(path.join(WS, "plain")), FILES / DIRS);
});
