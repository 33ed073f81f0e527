// Issue 42: "a grep over 20,000 files as a task, polled and then
// cancelled (the C work stops: no further reads counted)". One
// `burrow mcp --http` under the fault shim (host/test/faults.c): while the
// test's gate file exists, the grep's 5,000th read of a file under the
// tree, and every read after it, waits; the shim counts the reads made
// meanwhile (BURROW_FAULT_LOG, written at the server's exit). The grep
// becomes a task at its first look (task_after_ms 0), is polled with
// tasks/get, cancelled, and then let go: its status says it stopped at
// its next check, and the reads it made are far fewer than the 20,000
// files. Raw fetch, as tasks.test.mjs (the v2 client has no task helper).
//
//   cd test/e2e && node --test grep_task.test.mjs

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { BIN, fastTmpdir, startHttp, taskRequest, waitFor } from "./http_helpers.mjs";

const TOK = "grep-task-token-0123456789abcdef";
const FILES = 20_000, DIRS = 200, HELD_AT = 5000;
let TMP, WS, GATE, LOG, server;

before(async () => {
  TMP = fastTmpdir("burrow-grep-task-");
  WS = path.join(TMP, "ws");
  for (let d = 0; d < DIRS; d++) {
    const dir = path.join(WS, `d${d}`);
    fs.mkdirSync(dir, { recursive: true });
    for (let i = 0; i < FILES / DIRS; i++) fs.writeFileSync(path.join(dir, `f${i}.txt`), `line ${d}/${i}\nneedle ${i % 7}\n`);
  }
  const sha = crypto.createHash("sha256").update(TOK).digest("hex");
  fs.writeFileSync(path.join(TMP, "burrow.yaml"), "roots: [ws]\ncaps: {task_after_ms: 0}\n"
    + `http:\n  workers: 2\n  tokens:\n    - {sha256: ${sha}}\n`);
  GATE = path.join(TMP, "gate");
  LOG = path.join(TMP, "faults.log");
  server = await startHttp(["--config", path.join(TMP, "burrow.yaml")], { env: {
    LD_PRELOAD: path.join(path.dirname(BIN), "faults.so"), BURROW_FAULT: `read:WAIT:after=${HELD_AT}`,
    BURROW_FAULT_DIR: WS, BURROW_FAULT_GATE: GATE, BURROW_FAULT_LOG: LOG } });
});
after(async () => {
  if (server) await server.stop();
  if (TMP) fs.rmSync(TMP, { recursive: true, force: true });
});

let nextId = 1;
/** One stateless request declaring the tasks extension, read to its end:
 * its result, or its error as {error}. */
async function rq(method, params) {
  return taskRequest(server.url, TOK, nextId++, method, params);
}

test("a grep over 20,000 files is a task, polled, then cancelled: its C work stops, no further reads", { timeout: 300_000 }, async () => {
  fs.writeFileSync(GATE, "held\n"); // reads past the 5,000th made from now on wait
  const created = await rq("tools/call", { name: "grep", arguments: { pattern: "needle 3", output_mode: "count" } });
  assert.equal(created.resultType, "task", JSON.stringify(created).slice(0, 300));
  const id = created.taskId;
  // polled: it works (held at the gate once it has read 5,000 files)
  const polled = await rq("tasks/get", { taskId: id });
  assert.equal(polled.status, "working", JSON.stringify(polled).slice(0, 300));
  const ack = await rq("tasks/cancel", { taskId: id });
  assert.equal(ack.resultType, "complete", JSON.stringify(ack));
  fs.rmSync(GATE); // cancelled: the grep goes on to its next look
  let last;
  await waitFor(async () => {
    last = await rq("tasks/get", { taskId: id });
    return /the call (stopped|ran)/.test(last.statusMessage || "");
  }, () => `the grep's task to say how it ended (last: ${JSON.stringify(last).slice(0, 300)})`, 120_000, 100);
  assert.equal(last.status, "cancelled", JSON.stringify(last).slice(0, 300));
  assert.match(last.statusMessage, /stopped at its next check/);
  // the reads the shim counted while the gate was up: the server writes
  // them at its exit (a clean stop: SIGTERM, the drain)
  await server.stop();
  server = null;
  const seen = Number((fs.readFileSync(LOG, "utf8").match(/seen read (\d+)/) || [])[1]);
  assert.ok(seen >= HELD_AT, `the grep read at least up to the gate: ${seen}`);
  assert.ok(seen < FILES / 2, `its C work stopped: ${seen} files read of ${FILES}`);
});
