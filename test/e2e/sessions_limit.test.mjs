// End-to-end (issue 45): a token's max_sessions is one limit for the
// deployment, not one per instance. Two `burrow mcp --http` instances on
// one Redis (a redis-server this test starts on a free port), a token with
// max_sessions: 2: one session opened on each instance, a third is refused
// (429) on both, however often it is asked, and the token's record in
// the store holds its two sessions only; a DELETE gives its place back,
// through either instance.
// Another token of the tenant is not counted with it (nor locked out).
// Redis stopped: an initialize is refused with STORE_UNAVAILABLE (fail
// closed), and works again once it is back.
//
//   cd test/e2e && node --test sessions_limit.test.mjs     (needs redis-server)

import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { HEADERS, initBody, freePort, startHttp, waitFor } from "./http_helpers.mjs";
import { needRedis, redisOn } from "./redis_helpers.mjs";

const TOKENS = { one: "token-sessions-limit-one-0123456", two: "token-sessions-limit-two-0123456" };
const sha = (t) => crypto.createHash("sha256").update(t).digest("hex");

// An initialize by raw fetch: {status, sid, body}.
async function init(url, token) {
  const r = await fetch(url, { method: "POST", headers: { ...HEADERS, authorization: `Bearer ${token}` },
    body: initBody() });
  const body = await r.text();
  return { status: r.status, sid: r.headers.get("mcp-session-id"), body };
}

// A session of the SDK 1.x client: connected, and a call answered.
async function session(url, token) {
  const c = new Client({ name: "sessions-limit", version: "1" }, { capabilities: {} });
  const t = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { authorization: `Bearer ${token}` } } });
  await c.connect(t);
  const r = await c.callTool({ name: "stat", arguments: { path: "." } });
  assert.ok(!r.isError, JSON.stringify(r));
  return { c, t };
}

test("max_sessions of a token held across two instances on one Redis", { timeout: 180_000 }, async () => {
  needRedis();
  const tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "burrow-sessions-limit-")));
  const burrows = [], clients = [];
  const redis = redisOn(tmp, await freePort()), rport = redis.port;
  try {
    await redis.start();
    fs.mkdirSync(path.join(tmp, "shared"));
    fs.writeFileSync(path.join(tmp, "burrow.yaml"), "roots: [shared]\n"
      + `state: {url: "redis://127.0.0.1:${rport}/0", timeout: 1s, connect_timeout: 1s}\n`
      + `http:\n  tokens:\n    - {sha256: ${sha(TOKENS.one)}, max_sessions: 2}\n    - {sha256: ${sha(TOKENS.two)}, max_sessions: 2}\n`);
    for (let i = 0; i < 2; i++) burrows.push(await startHttp(["--config", path.join(tmp, "burrow.yaml")]));
    const [A, B] = burrows.map((b) => b.url);

    const a = await session(A, TOKENS.one);
    clients.push(a);
    const b = await session(B, TOKENS.one);
    clients.push(b);
    for (const u of [A, B]) {
      const third = await init(u, TOKENS.one);
      assert.equal(third.status, 429, `${u}: ${third.status} ${third.body}`);
      assert.match(third.body, /most sessions open \(on all the deployment's instances together\)/);
    }
    // refused initializes leave nothing behind: the token's record in the
    // store holds its two live sessions, however often it is asked
    for (let i = 0; i < 30; i++) assert.equal((await init(burrows[i % 2].url, TOKENS.one)).status, 429);
    const hex = Buffer.from("default").toString("hex");
    const rec = spawnSync("redis-cli", ["-p", String(rport), "HGET", `burrow:{t${hex}}:e:sessions-of/${sha(TOKENS.one).slice(0, 16)}`, "d"],
      { encoding: "utf8" }).stdout;
    assert.deepEqual(rec.trim().split("\n").slice(1).map((l) => l.split(" ")[0]).sort(),
      [a.t.sessionId, b.t.sessionId].sort(), rec);
    // another token of the tenant: its own count
    for (const u of [A, B]) {
      const o = await session(u, TOKENS.two);
      clients.push(o);
    }
    const over = await init(A, TOKENS.two);
    assert.equal(over.status, 429, over.body);

    // a DELETE (through the other instance) gives the place back
    const sid = a.t.sessionId;
    const del = await fetch(B, { method: "DELETE", headers: { authorization: `Bearer ${TOKENS.one}`, "mcp-session-id": sid,
      "mcp-protocol-version": "2025-11-25" } });
    assert.equal(del.status, 200, await del.text());
    const again = await init(A, TOKENS.one);
    assert.equal(again.status, 200, again.body);
    const full = await init(B, TOKENS.one);
    assert.equal(full.status, 429, full.body);

    // the store down: an initialize is refused, never let through
    await redis.stop();
    const down = await init(A, TOKENS.two);
    assert.equal(down.status, 503, down.body);
    assert.match(down.body, /STORE_UNAVAILABLE/);
    await redis.start(); // empty: every count starts again
    await waitFor(async () => (await init(A, TOKENS.two)).status === 200, "an initialize once the store is back");
  } finally {
    for (const { c } of clients) await c.close().catch(() => {});
    for (const b of burrows) await b.stop();
    await redis.stop();
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});
