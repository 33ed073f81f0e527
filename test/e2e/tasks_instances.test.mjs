// Issue 42 with issue 45's store: MCP tasks (io.modelcontextprotocol/tasks
// at 2026-07-28) on two `burrow mcp --http` instances that share one Redis
// (a redis-server this test starts on a free port). A grep that runs long,
// made through instance A, becomes a task; its request's stream is closed
// with the CreateTaskResult, and the task is read through instance B until
// it completes there with its result. Another long grep on A is cancelled
// through B: A's call sees the record's cancel at its next look and its C
// work stops. A recursive copy of 60,000 files on A, a task, held at a
// step by the fault shim (host/test/faults.c WAIT) until cancelled through
// B: A's staging looks at the record every 1024 entries, stops, and is
// rolled back (no destination, nothing staged left). Raw fetch, as
// tasks.test.mjs.
//
//   cd test/e2e && node --test tasks_instances.test.mjs     (needs redis-server)

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { BIN, fastTmpdir, freePort, startHttp, taskRequest, waitFor } from "./http_helpers.mjs";
import { needRedis, redisOn } from "./redis_helpers.mjs";

const T = { timeout: 300_000 };
const V = "2026-07-28";
const TOK = "tasks-instances-token-0123456789";
// no digits in the data: every position is tried and fails, slowly (tasks.test.mjs's)
const SLOW = "(?:[a-z]+\\s+){1,40}[0-9]";
const TREE_FILES = 60_000, TREE_DIRS = 6000;
let TMP, TREE, GATE, redis, A, B;

before(async () => {
  needRedis();
  TMP = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "burrow-tasks-inst-")));
  const slow = path.join(TMP, "ws", "slow"), some = path.join(TMP, "ws", "some");
  fs.mkdirSync(slow, { recursive: true });
  fs.mkdirSync(some);
  const words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "theta", "kappa"];
  const line = Array.from({ length: 12 }, (_, i) => words[(i * 5) % words.length]).join(" ") + "\n";
  for (let i = 0; i < 300; i++) fs.writeFileSync(path.join(slow, `f${i}.txt`), line.repeat(4000));
  // a tenth of it: a grep of some seconds, past the moment a call becomes a task
  for (let i = 0; i < 30; i++) fs.writeFileSync(path.join(some, `f${i}.txt`), line.repeat(4000));
  // a second root, where 60,000 small files are quick to make: a copy that
  // runs long enough past its becoming a task (at once: task_after_ms 0)
  // for the other instance's cancel to reach it through the store
  TREE = fastTmpdir("burrow-tasks-tree-");
  for (let d = 0; d < TREE_DIRS; d++) { // many directories: each costs the copy more than a file
    fs.mkdirSync(path.join(TREE, "src", `d${d}`), { recursive: true });
    for (let i = 0; i < TREE_FILES / TREE_DIRS; i++) fs.writeFileSync(path.join(TREE, "src", `d${d}`, `f${i}`), `${d}/${i}\n`);
  }
  redis = redisOn(TMP, await freePort());
  await redis.start();
  const rport = redis.port;
  const sha = crypto.createHash("sha256").update(TOK).digest("hex");
  fs.writeFileSync(path.join(TMP, "burrow.yaml"), `roots: [ws, ${JSON.stringify(TREE)}]\n`
    + "caps: {task_after_ms: 0}\n"
    + `state: {url: "redis://127.0.0.1:${rport}/0"}\n`
    + `http:\n  workers: 2\n  tokens:\n    - {sha256: ${sha}}\n`);
  // A under the fault shim: a change under TREE past the 20,000th waits
  // while GATE exists, so the copy below is held, a task, until the
  // cancel through B is recorded (a state, not a race with the copy's speed)
  GATE = path.join(TMP, "gate");
  A = await startHttp(["--config", path.join(TMP, "burrow.yaml")], { env: {
    LD_PRELOAD: path.join(path.dirname(BIN), "faults.so"), BURROW_FAULT: "any:WAIT:after=20000:times=1",
    BURROW_FAULT_DIR: TREE, BURROW_FAULT_GATE: GATE } });
  B = await startHttp(["--config", path.join(TMP, "burrow.yaml")]);
});
after(async () => {
  for (const s of [A, B]) if (s) await s.stop();
  if (redis) await redis.stop();
  if (TMP) fs.rmSync(TMP, { recursive: true, force: true });
  if (TREE) fs.rmSync(TREE, { recursive: true, force: true });
});

let nextId = 1;
/** One stateless request to url, declaring the tasks extension: its
 * result, or its error as {error}. */
async function rq(url, method, params) {
  return taskRequest(url, TOK, nextId++, method, params, { whole: false, timeoutMs: 120_000 });
}

test("a grep that runs long on one instance becomes a task, read through the other until it completes with its result", T, async () => {
  const created = await rq(A.url, "tools/call", { name: "grep", arguments: { pattern: SLOW, path: "some", output_mode: "count" } });
  assert.equal(created.resultType, "task",
    `the grep ended before it became a task (${JSON.stringify(created).slice(0, 200)}): the tree is too small for this machine`);
  const id = created.taskId;
  // the request's stream is closed: the task is read through B
  let last;
  await waitFor(async () => {
    last = await rq(B.url, "tasks/get", { taskId: id });
    return last.status !== "working";
  }, "the grep's task to end, read through the other instance", 240_000, 200);
  assert.equal(last.status, "completed", JSON.stringify(last).slice(0, 400));
  assert.ok(last.result && !last.result.isError, JSON.stringify(last.result).slice(0, 400));
  assert.match(JSON.stringify(last.result), /0 matches|no match|"count":0|0 lines/i, JSON.stringify(last.result).slice(0, 400));
});

test("a long grep on one instance is cancelled through the other: its C work stops", T, async () => {
  const created = await rq(A.url, "tools/call", { name: "grep", arguments: { pattern: SLOW, path: "slow" } });
  assert.equal(created.resultType, "task", JSON.stringify(created).slice(0, 200));
  const id = created.taskId;
  assert.equal((await rq(B.url, "tasks/get", { taskId: id })).status, "working");
  const ack = await rq(B.url, "tasks/cancel", { taskId: id });
  assert.equal(ack.resultType, "complete", JSON.stringify(ack));
  let last;
  await waitFor(async () => {
    last = await rq(A.url, "tasks/get", { taskId: id });
    return /the call (stopped|ran)/.test(last.statusMessage || "");
  }, "the cancelled grep's instance to record how its call ended", 60_000, 100);
  assert.equal(last.status, "cancelled");
  assert.match(last.statusMessage, /stopped at its next check/);
});

test("a 60,000-file copy on one instance, cancelled through the other: its staging stops and is rolled back", T, async () => {
  const dst = path.join(TREE, "dst");
  fs.writeFileSync(GATE, "held\n"); // the copy waits at its 20,000th change
  const created = await rq(A.url, "tools/call", { name: "copy",
    arguments: { source: path.join(TREE, "src"), destination: dst, recursive: true } });
  assert.equal(created.resultType, "task",
    `the copy ended before it became a task (${JSON.stringify(created).slice(0, 200)}): the tree is too small for this machine`);
  const id = created.taskId;
  const ack = await rq(B.url, "tasks/cancel", { taskId: id });
  assert.equal(ack.resultType, "complete", JSON.stringify(ack));
  fs.rmSync(GATE); // the cancel is in the store: the copy goes on to its next look
  // B only wrote the record: A's staging sees it at its next look
  let last;
  await waitFor(async () => {
    last = await rq(A.url, "tasks/get", { taskId: id });
    return /the call (stopped|ran)/.test(last.statusMessage || "");
  }, "the cancelled copy's instance to record how its call ended", 60_000, 100);
  assert.equal(last.status, "cancelled");
  assert.match(last.statusMessage, /stopped at its next check/);
  assert.equal(fs.existsSync(dst), false, "nothing at the destination");
  assert.deepEqual(fs.readdirSync(TREE).filter((n) => n.startsWith(".burrow-stage.")), [], "the staged copy was removed");
  assert.equal(fs.readdirSync(path.join(TREE, "src"), { recursive: true }).length, TREE_FILES + TREE_DIRS, "the source untouched");
});
