// End-to-end (issue 45, publish/subscribe): two `burrow mcp --http`
// instances share one Redis (a redis-server this test starts on a free
// port) and serve two different folders under the same mount, a relation
// only the store knows: inotify on A can never see a write made through B.
// A listen (MCP 2026-07-28, the v2 SDK) and a resources/subscribe (SDK
// 1.x) held on A hear a write and a new file made through B; a change
// made outside burrow in A's folder is still heard (inotify); Redis
// restarted, A is told it may have missed changes (every URI updated)
// and hears B's writes again, with no restart of burrow.
//
//   cd test/e2e && npm ci && node --test changes_redis.test.mjs     (needs redis-server)

import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { Client as Client1 } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport as Transport1 } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ResourceUpdatedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { freePort, startHttp, waitFor } from "./http_helpers.mjs";
import { needRedis, redisOn } from "./redis_helpers.mjs";


test("a listen and a subscription on one instance hear writes made through another over one Redis", { timeout: 180_000 }, async () => {
  needRedis();
  const tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "burrow-changes-e2e-")));
  const servers = [], clients = [];
  const redis = redisOn(tmp, await freePort()), rport = redis.port;
  try {
    await redis.start();
    for (const side of ["a", "b"]) {
      fs.mkdirSync(path.join(tmp, side, "ws", "sub"), { recursive: true });
      fs.writeFileSync(path.join(tmp, side, "ws", "notes.txt"), `${side}0\n`);
      fs.writeFileSync(path.join(tmp, side, "burrow.yaml"), "roots: [{path: ws, mount: /workspace}]\n"
        + `state: {url: "redis://127.0.0.1:${rport}/0", timeout: 2s}\n`);
    }
    const A = await startHttp(["--config", path.join(tmp, "a", "burrow.yaml")]);
    servers.push(A);
    const B = await startHttp(["--config", path.join(tmp, "b", "burrow.yaml")]);
    servers.push(B);
    const NOTES = "file:///workspace/notes.txt", SUB = "file:///workspace/sub";

    // on A: a listen (2026-07-28) and a session's subscription (SDK 1.x)
    const seen = [];
    const c = new Client({ name: "listener", version: "1" }, { versionNegotiation: { mode: "auto" } });
    c.setNotificationHandler("notifications/resources/updated", (n) => seen.push({ via: "listen", uri: n.params.uri }));
    await c.connect(new StreamableHTTPClientTransport(new URL(A.url)));
    clients.push(c);
    assert.equal(c.getNegotiatedProtocolVersion(), "2026-07-28");
    const l = await c.listen({ resourceSubscriptions: [NOTES, SUB] });
    assert.deepEqual(l.honoredFilter, { resourceSubscriptions: [NOTES, SUB] });
    const s = new Client1({ name: "subscriber", version: "1" });
    s.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => seen.push({ via: "subscribe", uri: n.params.uri }));
    await s.connect(new Transport1(new URL(A.url)));
    clients.push(s);
    await s.subscribeResource({ uri: NOTES });
    const count = (via, uri) => seen.filter((m) => m.via === via && m.uri === uri).length;

    // on B: a write and a new file, in B's folder
    const w = new Client({ name: "writer", version: "1" }, { versionNegotiation: { mode: "auto" } });
    await w.connect(new StreamableHTTPClientTransport(new URL(B.url)));
    clients.push(w);
    const r1 = await w.callTool({ name: "write_file", arguments: { path: "/workspace/notes.txt", content: "b1\n" } });
    assert.equal(r1.isError, undefined, JSON.stringify(r1));
    assert.equal(fs.readFileSync(path.join(tmp, "a", "ws", "notes.txt"), "utf8"), "a0\n", "A's folder untouched");
    await waitFor(() => count("listen", NOTES) >= 1, () => `A's listen to hear B's write: ${JSON.stringify(seen)}`);
    await waitFor(() => count("subscribe", NOTES) >= 1, () => `A's subscription to hear B's write: ${JSON.stringify(seen)}`);
    const r2 = await w.callTool({ name: "write_file", arguments: { path: "/workspace/sub/new.txt", content: "n\n" } });
    assert.equal(r2.isError, undefined, JSON.stringify(r2));
    await waitFor(() => count("listen", SUB) >= 1, () => `A's listen to hear the folder's new entry: ${JSON.stringify(seen)}`);

    // a change outside burrow in A's own folder: inotify still tells it
    const before = count("listen", NOTES);
    fs.appendFileSync(path.join(tmp, "a", "ws", "notes.txt"), "outside\n");
    await waitFor(() => count("listen", NOTES) > before, () => `an outside change heard: ${JSON.stringify(seen)}`);

    // Redis restarted: A is told it may have missed changes (each URI), then hears B again
    await redis.stop();
    await redis.start();
    const n0 = count("listen", NOTES), s0 = count("listen", SUB);
    await waitFor(() => count("listen", NOTES) > n0 && count("listen", SUB) > s0,
      () => `the may-have-missed signal after Redis came back: ${JSON.stringify(seen)}`);
    const n1 = count("listen", NOTES);
    let i = 0;
    await waitFor(async () => {
      await w.callTool({ name: "write_file", arguments: { path: "/workspace/notes.txt", content: `b${2 + i++}\n` } });
      return count("listen", NOTES) > n1;
    }, () => `B's write heard after Redis came back: ${JSON.stringify(seen)}`, 30_000, 200);
    await l.close();
  } finally {
    for (const c of clients) await c.close().catch(() => {});
    for (const s of servers) await s.stop();
    await redis.stop();
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});
