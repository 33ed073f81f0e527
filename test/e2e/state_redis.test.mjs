// End-to-end (issue 45): three `burrow mcp --http` instances, one Redis
// (a redis-server this test starts on a free port: never the system's),
// HAProxy with `balance roundrobin` and no stick table. 8 stateless
// clients of one token write against one 1 MB quota: the instances hold it
// exactly. An approval asked on one instance is answered on another and
// refused on every instance afterwards. Redis stopped: a write, which
// needs the store, is refused with STORE_UNAVAILABLE; a read, which needs
// nothing from it, is served; Redis back, writes go through again without
// a restart of burrow.
//
//   cd test/e2e && node --test state_redis.test.mjs     (needs redis-server, haproxy)

import { test } from "node:test";
import assert from "node:assert/strict";
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { sseEvents, waitFor } from "./http_helpers.mjs";
import { cluster } from "./redis_helpers.mjs";

const V = "2026-07-28";
const META = {
  "io.modelcontextprotocol/protocolVersion": V,
  "io.modelcontextprotocol/clientInfo": { name: "state-redis-test", version: "1" },
  "io.modelcontextprotocol/clientCapabilities": { elicitation: { form: {} } },
};
const TOKEN = "token-redis-0123456789";
const YES = { approve: { action: "accept", content: { approve: true } } };
const MB = 1_000_000, PIECE = 40_000;

let nextId = 1;
// One stateless tools/call: {who (the instance that answered), msg}.
async function call(url, name, args, extra = {}) {
  const id = nextId++;
  const r = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream",
      "mcp-protocol-version": V, "mcp-method": "tools/call", "mcp-name": name, authorization: `Bearer ${TOKEN}` },
    body: JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call", params: { name, arguments: args, _meta: META, ...extra } }),
  });
  const who = r.headers.get("x-served-by") || url;
  let msg;
  if ((r.headers.get("content-type") || "").includes("text/event-stream")) {
    for await (const e of sseEvents(r.body, 60_000)) {
      const m = e.data && JSON.parse(e.data);
      if (m && m.id === id) { msg = m; break; }
    }
  } else msg = JSON.parse(await r.text());
  return { who, msg, status: r.status };
}


test("three instances, one Redis, round robin without a stick table: one exact quota, approvals across instances, fail closed and recover",
  { timeout: 300_000 }, async () => {
    const cl = await cluster({ prefix: "burrow-redis-e2e-", setup: ({ tmp, ws, rport }) => {
      fs.writeFileSync(path.join(ws, "held", "a.txt"), "a0\n");
      fs.writeFileSync(path.join(ws, "r.txt"), "read me\n");
      fs.writeFileSync(path.join(tmp, "approval.key"), "state store e2e key, 32 bytes or more\n");
      const sha = crypto.createHash("sha256").update(TOKEN).digest("hex");
      return "roots: [shared]\n"
        + "policies: [./ask.lua, {name: quotas, max_bytes_written: 1MB}]\n"
        + `state: {url: "redis://127.0.0.1:${rport}/0", timeout: 2s}\n`
        + `http:\n  approval_key_file: approval.key\n  tokens:\n    - {sha256: ${sha}}\n`;
    } });
    const { tmp, burrows, url, redis } = cl;
    try {

      const [A, B, C] = burrows.map((b) => b.url);
      // an approval asked on one instance, answered on another, refused on all after
      const write = { path: "held/a.txt", content: "a1\n" };
      const q = (await call(A, "write_file", write)).msg.result;
      assert.equal(q.resultType, "input_required", JSON.stringify(q));
      const first = (await call(B, "write_file", write, { inputResponses: YES, requestState: q.requestState })).msg;
      assert.equal(first.result?.isError, undefined, JSON.stringify(first));
      assert.equal(fs.readFileSync(path.join(tmp, "shared", "held", "a.txt"), "utf8"), "a1\n");
      for (const u of [A, B, C]) {
        const again = (await call(u, "write_file", write, { inputResponses: YES, requestState: q.requestState })).msg;
        assert.equal(again.error?.code, -32602, JSON.stringify(again));
        assert.match(again.error.message, /used already/);
      }

      // 8 clients of one token, each writing 40 KB pieces until refused
      const served = new Set();
      const counts = await Promise.all(Array.from({ length: 8 }, async (_, c) => {
        let ok = 0;
        for (let i = 0; i < 40; i++) {
          const { who, msg } = await call(url, "write_file", { path: `c${c}-${i}.bin`, content: "x".repeat(PIECE) });
          served.add(who);
          const res = msg.result;
          if (res && !res.isError) { ok++; continue; }
          assert.equal(res?._meta?.["burrow/code"], "POLICY_DENIED", JSON.stringify(msg));
          assert.match(res.content[0].text, /quota: writing 40000 bytes would pass the 1000000 bytes/);
          break;
        }
        return ok;
      }));
      const total = counts.reduce((a, b) => a + b, 0) * PIECE;
      const spent = total + 3; // and the approved write above ("a1\n"): the same token's budget
      assert.ok(spent <= MB, `${spent} bytes written under a 1 MB quota`);
      assert.ok(spent > MB - PIECE, `${spent} bytes: the quota was spent to within one write`);
      assert.equal(served.size, 3, `every instance served: ${[...served]}`);
      const onDisk = fs.readdirSync(path.join(tmp, "shared")).filter((f) => f.endsWith(".bin")).length * PIECE;
      assert.equal(onDisk, total);

      // Redis stopped: writes need the store and are refused; reads are served
      await redis.stop();
      const w = (await call(A, "write_file", { path: "down.txt", content: "d" })).msg.result;
      assert.equal(w._meta?.["burrow/code"], "STORE_UNAVAILABLE", JSON.stringify(w));
      assert.match(w.content[0].text, /state store did not answer \(STORE_UNAVAILABLE/);
      assert.ok(!fs.existsSync(path.join(tmp, "shared", "down.txt")));
      const r = (await call(B, "read_file", { path: "r.txt" })).msg.result;
      assert.equal(r.isError, undefined, JSON.stringify(r));
      // back (empty: no persistence), with no restart of burrow
      await redis.start();
      await waitFor(async () => {
        const again = (await call(C, "write_file", { path: "up.txt", content: "u" })).msg.result;
        return again && !again.isError;
      }, "a write through an instance once Redis is back", 30_000, 200);
      assert.ok(fs.existsSync(path.join(tmp, "shared", "up.txt")));
    } finally {
      await cl.stop();
    }
  });
