// Issue 42: MCP tasks (the io.modelcontextprotocol/tasks extension at
// 2026-07-28) over HTTP with two workers. A grep that runs long becomes a
// task: its request is answered with the CreateTaskResult while the grep
// goes on on its worker; the task is read through the other worker (the
// one the grep holds cannot serve anything else meanwhile), and
// tasks/cancel, served there too, stops the grep's C work on the first
// (the record then says the call stopped). Another token's client finds
// no such task. Raw fetch, as stateless.test.mjs.
//
//   cd test/e2e && node --test tasks.test.mjs

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { startHttp, taskRequest, waitFor } from "./http_helpers.mjs";

const T = { timeout: 120_000 };
const V = "2026-07-28";
const EXT = "io.modelcontextprotocol/tasks";
const TOKA = "tasks-token-a-0123456789abcdef";
const TOKB = "tasks-token-b-0123456789abcdef";
const sha = (t) => crypto.createHash("sha256").update(t).digest("hex");
// no digits in the data: every position is tried and fails, slowly (search.test.mjs's)
const SLOW = "(?:[a-z]+\\s+){1,40}[0-9]";
let TMP, server;

before(async () => {
  TMP = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "burrow-tasks-")));
  const ws = path.join(TMP, "ws", "slow");
  fs.mkdirSync(ws, { recursive: true });
  const words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "theta", "kappa"];
  const line = Array.from({ length: 12 }, (_, i) => words[(i * 5) % words.length]).join(" ") + "\n";
  const blob = line.repeat(4000);
  for (let i = 0; i < 300; i++) fs.writeFileSync(path.join(ws, `f${String(i).padStart(3, "0")}.txt`), blob);
  fs.writeFileSync(path.join(TMP, "burrow.yaml"), "roots: [ws]\n"
    + `http:\n  workers: 2\n  tokens:\n    - {sha256: ${sha(TOKA)}}\n    - {sha256: ${sha(TOKB)}}\n`);
  server = await startHttp(["--config", path.join(TMP, "burrow.yaml")]);
});
after(async () => {
  if (server) await server.stop();
  if (TMP) fs.rmSync(TMP, { recursive: true, force: true });
});

let nextId = 1;
/** One stateless request of token tok, declaring the tasks extension:
 * its result, or its error as {error}. */
async function rq(method, params, tok = TOKA) {
  return taskRequest(server.url, tok, nextId++, method, params, { whole: false });
}

test("a long grep becomes a task, read and cancelled through the other worker; another token finds nothing", T, async () => {
  const created = await rq("tools/call", { name: "grep", arguments: { pattern: SLOW } });
  assert.equal(created.resultType, "task",
    `the grep ended before it became a task (${JSON.stringify(created).slice(0, 200)}): the tree is too small for this machine`);
  assert.equal(created.status, "working");
  assert.ok(Number.isInteger(created.ttlMs) && created.ttlMs > 0);
  const id = created.taskId;

  // the grep holds its worker: this request is the other worker's
  const seen = await rq("tasks/get", { taskId: id });
  assert.equal(seen.taskId, id);
  assert.equal(seen.status, "working", JSON.stringify(seen));
  assert.equal(seen.result, undefined);

  // another token of the same tenant: no such task, and it cannot cancel it
  assert.equal((await rq("tasks/get", { taskId: id }, TOKB)).error?.code, -32602);
  assert.equal((await rq("tasks/cancel", { taskId: id }, TOKB)).error?.code, -32602);
  assert.equal((await rq("tasks/get", { taskId: id })).status, "working", "untouched by the other token");

  const cancelAt = performance.now();
  const ack = await rq("tasks/cancel", { taskId: id });
  assert.equal(ack.resultType, "complete");
  assert.equal(ack.taskId, undefined, "the ack carries no task");
  assert.equal((await rq("tasks/get", { taskId: id })).status, "cancelled");
  // a state, not a time: the grep's worker writes how its call ended;
  // left alone the grep runs 15 s or more (600 files did not end within
  // its budget, max_search_ms: 30 s)
  let last;
  await waitFor(async () => {
    last = await rq("tasks/get", { taskId: id });
    return /the call (stopped|ran)/.test(last.statusMessage || "");
  }, "the cancelled grep's worker to record how its call ended", 60_000, 100);
  const afterCancel = performance.now() - cancelAt;
  assert.equal(last.status, "cancelled");
  assert.match(last.statusMessage, /stopped at its next check/);
  assert.ok(afterCancel < 10_000, `the grep stopped ${afterCancel.toFixed(0)} ms after the cancel (unstopped it runs 15 s or more)`);
  assert.equal(last.result, undefined, "a cancelled task keeps no partial result");

  // both workers serve again: a quick grep answers plainly (no task)
  const quick = await rq("tools/call", { name: "grep", arguments: { pattern: "alpha", path: "slow/f000.txt", output_mode: "count" } });
  assert.equal(quick.resultType, "complete", JSON.stringify(quick).slice(0, 200));
  assert.equal(quick.taskId, undefined);
});

test("a task's method without the extension is -32021 (HTTP 400); tasks/result and tasks/list are 404, -32601", T, async () => {
  const post = (method, params, caps) => fetch(server.url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json", "mcp-protocol-version": V,
      "mcp-method": method, ...(params.taskId && method !== "tasks/result" ? { "mcp-name": params.taskId } : {}),
      authorization: `Bearer ${TOKA}` },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params: { ...params, _meta: {
      "io.modelcontextprotocol/protocolVersion": V, "io.modelcontextprotocol/clientCapabilities": caps } } }),
  });
  const gated = await post("tasks/get", { taskId: "1.00" }, {});
  assert.equal(gated.status, 400);
  const g = await gated.json();
  assert.equal(g.error.code, -32021);
  assert.deepEqual(g.error.data.requiredCapabilities, { extensions: { [EXT]: {} } });
  for (const m of ["tasks/result", "tasks/list"]) {
    const r = await post(m, m === "tasks/result" ? { taskId: "1.00" } : {}, { extensions: { [EXT]: {} } });
    assert.equal(r.status, 404, m);
    assert.equal((await r.json()).error.code, -32601, m);
  }
});
