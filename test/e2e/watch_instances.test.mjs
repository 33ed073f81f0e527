// Issue 26: one inotify instance per process. Every HTTP session that
// subscribes adds its watches to the process's one instance (watch.c's
// hub), so 150 sessions (more than the 128 instances a uid has) all
// subscribe, each hears the change, and /proc/PID/fd shows one instance.
// At b663a06 each session made its own, the 128th failed with -32603, and
// every other process of the uid was locked out of inotify meanwhile.
//
//   cd test/e2e && npm ci && node --test watch_instances.test.mjs

import { test, after } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ResourceUpdatedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { startHttp } from "./http_helpers.mjs";

const N = 150;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
let server, dir;
after(async () => {
  if (server) await server.stop();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

function inotifyInstances(pid) {
  let n = 0;
  for (const fd of fs.readdirSync(`/proc/${pid}/fd`)) {
    try { if (fs.readlinkSync(`/proc/${pid}/fd/${fd}`) === "anon_inode:inotify") n++; } catch { /* closed meanwhile */ }
  }
  return n;
}

test(`${N} sessions subscribe: one inotify instance, and every session hears the change`, { timeout: 180_000 }, async () => {
  dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "burrow-watchers-")));
  fs.writeFileSync(path.join(dir, "watched.txt"), "v1\n");
  fs.writeFileSync(path.join(dir, "burrow.yaml"), `roots: [${dir}]\nhttp: {max_sessions: ${N + 10}}\n`);
  server = await startHttp(["--config", path.join(dir, "burrow.yaml")]);
  const uri = `file://${dir}/watched.txt`;
  const heard = new Set();
  const clients = [];
  for (let i = 0; i < N; i++) {
    const c = new Client({ name: `s${i}`, version: "1" });
    c.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => { if (n.params.uri === uri) heard.add(i); });
    await c.connect(new StreamableHTTPClientTransport(new URL(server.url)));
    await c.subscribeResource({ uri }); // refused with -32603 past the uid's instances before
    clients.push(c);
  }
  assert.equal(inotifyInstances(server.proc.pid), 1, "one inotify instance in the server");
  // the GET streams are open once a change reaches them: write until all heard
  const until = Date.now() + 60_000;
  let k = 2;
  while (heard.size < N && Date.now() < until) {
    fs.writeFileSync(path.join(dir, "watched.txt"), `v${k++}\n`);
    await sleep(300);
  }
  assert.equal(heard.size, N, `sessions that heard the change: ${heard.size} of ${N}`);
  await Promise.all(clients.map((c) => c.close()));
});
