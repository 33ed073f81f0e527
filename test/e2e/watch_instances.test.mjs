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
import { startHttp, waitFor } from "./http_helpers.mjs";

const N = 150;
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
  // one change: a session whose GET stream is not open yet gets it when
  // the stream opens (kept for it), so every session hears this one
  fs.writeFileSync(path.join(dir, "watched.txt"), "v2\n");
  await waitFor(() => heard.size === N, () => `every session to hear the change (${heard.size} of ${N} did)`, 60_000);
  await Promise.all(clients.map((c) => c.close()));
});

// A tenant's watches are capped across all its sessions (http.max_watches,
// http.tenants.NAME.max_watches): one tenant cannot spend the uid's
// inotify watches. Past it a subscribe is refused (-32602, TOO_LARGE,
// naming the key) whichever session asks; an unsubscribe gives one back.
test("a tenant's watches are capped across its sessions", { timeout: 60_000 }, async () => {
  const d = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "burrow-watchcap-")));
  for (const f of ["a", "b", "c", "d"]) fs.writeFileSync(path.join(d, f), "x\n");
  fs.writeFileSync(path.join(d, "burrow.yaml"), `roots: [${d}]\nhttp: {max_watches: 3}\n`);
  const s = await startHttp(["--config", path.join(d, "burrow.yaml")]);
  const clients = [];
  try {
    for (let i = 0; i < 2; i++) {
      const c = new Client({ name: `cap${i}`, version: "1" });
      await c.connect(new StreamableHTTPClientTransport(new URL(s.url)));
      clients.push(c);
    }
    const [a, b] = clients;
    const uri = (f) => `file://${path.join(d, f)}`;
    await a.subscribeResource({ uri: uri("a") });
    await a.subscribeResource({ uri: uri("b") });
    await b.subscribeResource({ uri: uri("c") });
    const refused = await b.subscribeResource({ uri: uri("d") }).then(() => null, (e) => e);
    assert.ok(refused, "the fourth watch of the tenant is refused");
    assert.equal(refused.code, -32602);
    assert.match(refused.message, /http\.max_watches/);
    await a.unsubscribeResource({ uri: uri("a") });
    await b.subscribeResource({ uri: uri("d") }); // one came back
  } finally {
    for (const c of clients) await c.close();
    await s.stop();
    fs.rmSync(d, { recursive: true, force: true });
  }
});
