// End-to-end (issue 45, "no stickiness in either era"): three `burrow mcp
// --http` instances on one Redis (a redis-server this test starts on a free
// port), HAProxy with `balance roundrobin` and no stick table. The
// official SDK clients of both eras (1.x and v2 with its default, which
// speak the session revisions; v2 with versionNegotiation auto, which
// speaks 2026-07-28) run mixed calls through the proxy:
//   - every session is answered by at least two instances (HAProxy's
//     X-Served-By, recorded by a fetch wrapper), its calls all succeed;
//   - an approval asked in a session (an elicitation on the call's stream)
//     is answered by a POST that another instance takes: the call goes on;
//   - 8 clients of one token, session and stateless, write against one
//     1 MB quota: at most 1 MB and at least 1 MB less one write;
//   - a session deleted through one instance is gone on all three (404).
//
//   cd test/e2e && node --test sessions_shared.test.mjs     (needs redis-server, haproxy)

import { test } from "node:test";
import assert from "node:assert/strict";
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { Client as Client1 } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport as Transport1 } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { Client as Client2, StreamableHTTPClientTransport as Transport2 } from "@modelcontextprotocol/client";
import { cluster as threeOnRedis } from "./redis_helpers.mjs";

const TOKEN = "token-shared-sessions-0123456789";
const MB = 1_000_000, PIECE = 40_000;
const AUTH = { authorization: `Bearer ${TOKEN}` };
const OTHER = "another-token-of-the-same-tenant-42";

const text = (r) => r.content.map((b) => b.text).join("");

// Every request the clients make, with the session it names (or is given)
// and the instance that answered it.
const served = [];
function tracking(tag) {
  return async (url, init) => {
    const r = await fetch(url, init);
    const h = new Headers(init?.headers);
    let body = null;
    try { body = typeof init?.body === "string" ? JSON.parse(init.body) : null; } catch { body = null; }
    served.push({ tag, method: init?.method || "GET", sid: h.get("mcp-session-id") || r.headers.get("mcp-session-id"),
      who: r.headers.get("x-served-by"), status: r.status, body });
    return r;
  };
}

// A client of era: "v1" (SDK 1.x), "v2" (v2, its default: the session
// revisions) or "v2auto" (v2 negotiating 2026-07-28).
async function connect(url, era, tag, onAsk) {
  const caps = { capabilities: { elicitation: {} } };
  let c, t;
  if (era === "v1") {
    c = new Client1({ name: tag, version: "1" }, caps);
    t = new Transport1(new URL(url), { requestInit: { headers: AUTH }, fetch: tracking(tag) });
  } else {
    c = new Client2({ name: tag, version: "1" }, era === "v2auto" ? { ...caps, versionNegotiation: { mode: "auto" } } : caps);
    t = new Transport2(new URL(url), { requestInit: { headers: AUTH }, fetch: tracking(tag) });
  }
  if (onAsk) c.setRequestHandler(era === "v1" ? (await import("@modelcontextprotocol/sdk/types.js")).ElicitRequestSchema : "elicitation/create", onAsk);
  await c.connect(t);
  return { c, t, era, tag };
}

// Redis on a free port, three instances on one folder with one Redis
// store (an "ask" policy on held/, a 1 MB quota, two tokens of one
// tenant), HAProxy round robin without a stick table in front (checks:
// it notices a dead instance and sends the requests it could not deliver
// to another).
function cluster({ checks = false } = {}) {
  return threeOnRedis({ prefix: "burrow-shared-sess-", checks, setup: ({ tmp, ws, rport }) => {
    fs.writeFileSync(path.join(ws, "r.txt"), "read me\nneedle here\n");
    fs.writeFileSync(path.join(tmp, "approval.key"), "shared sessions e2e key, 32 bytes or more\n");
    const sha = crypto.createHash("sha256").update(TOKEN).digest("hex");
    const sha2 = crypto.createHash("sha256").update(OTHER).digest("hex");
    return "roots: [shared]\n"
      + "policies: [./ask.lua, {name: quotas, max_bytes_written: 1MB}]\n"
      + `state: {url: "redis://127.0.0.1:${rport}/0", timeout: 2s}\n`
      + `http:\n  approval_key_file: approval.key\n  tokens:\n    - {sha256: ${sha}}\n    - {sha256: ${sha2}}\n`;
  } });
}

test("sessions of both eras through any of three instances: no stick table, one quota, approvals answered anywhere, a delete seen everywhere",
  { timeout: 300_000 }, async () => {
    const cl = await cluster();
    const clients = [];
    const { burrows, ws, url } = cl;
    try {

      // mixed calls from one client of each era, one after another
      const asked = [];
      const approve = async (req) => {
        asked.push(req.params.message);
        return { action: "accept", content: { approve: true } };
      };
      for (const era of ["v1", "v2", "v2auto"]) clients.push(await connect(url, era, `mixed-${era}`, approve));
      for (const { c, era, tag } of clients) {
        if (era !== "v1") assert.equal(c.getNegotiatedProtocolVersion(), era === "v2auto" ? "2026-07-28" : "2025-11-25", tag);
        for (let i = 0; i < 6; i++) {
          const r = await c.callTool({ name: "read_file", arguments: { path: "r.txt" } });
          assert.match(text(r), /read me/, `${tag}: ${JSON.stringify(r)}`);
          const g = await c.callTool({ name: "grep", arguments: { pattern: "needle" } });
          assert.match(text(g), /r\.txt/, `${tag}: ${JSON.stringify(g)}`);
          const w = await c.callTool({ name: "write_file", arguments: { path: `${tag}.txt`, content: `round ${i}\n` } });
          assert.ok(!w.isError, `${tag}: ${JSON.stringify(w)}`);
          const e = await c.callTool({ name: "edit_file", arguments: { path: `${tag}.txt`, old_text: `round ${i}`, new_text: `edited ${i}` } });
          assert.ok(!e.isError, `${tag}: ${JSON.stringify(e)}`);
          assert.equal(fs.readFileSync(path.join(ws, `${tag}.txt`), "utf8"), `edited ${i}\n`);
        }
        await c.listTools();
      }
      // each session was served by two instances at least
      for (const { t, era, tag } of clients) {
        if (era === "v2auto") continue;
        const sid = t.sessionId;
        assert.ok(sid, `${tag} has a session`);
        const who = new Set(served.filter((s) => s.sid === sid && s.who).map((s) => s.who));
        assert.ok(who.size >= 2, `${tag}'s session ${sid} was answered by ${[...who]} only`);
        assert.ok(served.filter((s) => s.sid === sid).every((s) => s.status < 400), `${tag}: ${JSON.stringify(served.filter((s) => s.sid === sid && s.status >= 400))}`);
      }

      // an approval asked in a session, answered through another instance
      for (const { c, era, tag } of clients) {
        if (era === "v2auto") continue;
        let across = false;
        for (let i = 0; i < 3 && !across; i++) {
          const before = served.length;
          const r = await c.callTool({ name: "write_file", arguments: { path: `held/${tag}-${i}.txt`, content: "yes\n" } });
          assert.ok(!r.isError, `${tag}: ${JSON.stringify(r)}`);
          assert.equal(fs.readFileSync(path.join(ws, "held", `${tag}-${i}.txt`), "utf8"), "yes\n");
          const mine = served.slice(before).filter((s) => s.tag === tag && s.body);
          const call = mine.find((s) => s.body.method === "tools/call");
          const answer = mine.find((s) => s.body.result !== undefined);
          assert.ok(call && answer, `${tag}: the call and its answer: ${JSON.stringify(mine.map((s) => [s.who, s.body]))}`);
          across = call.who !== answer.who;
        }
        assert.ok(across, `${tag}: an elicitation's answer reached another instance than its call's at least once`);
      }
      assert.ok(asked.length >= 2, `the user was asked: ${asked.length}`);
      for (const { c } of clients) await c.close();
      clients.length = 0;

      // 8 clients of one token, sessions of both eras and stateless, one quota
      const eight = [];
      for (const era of ["v1", "v1", "v2", "v2", "v2auto", "v2auto", "v2auto", "v2auto"]) eight.push(await connect(url, era, `q${eight.length}-${era}`));
      clients.push(...eight);
      const counts = await Promise.all(eight.map(async ({ c, tag }) => {
        let ok = 0;
        for (let i = 0; i < 40; i++) {
          const r = await c.callTool({ name: "write_file", arguments: { path: `${tag}-${i}.bin`, content: "x".repeat(PIECE) } });
          if (!r.isError) { ok++; continue; }
          assert.match(text(r), /quota: writing 40000 bytes would pass the 1000000 bytes/, `${tag}: ${JSON.stringify(r)}`);
          break;
        }
        return ok;
      }));
      const bins = counts.reduce((a, b) => a + b, 0) * PIECE;
      assert.equal(fs.readdirSync(ws).filter((f) => f.endsWith(".bin")).length * PIECE, bins);
      assert.ok(counts.filter((n) => n > 0).length >= 2, `several clients wrote: ${counts}`);
      // the token's one budget, through every instance and era (the writes
      // and edits above spent a few hundred bytes of it)
      assert.ok(bins <= MB, `${bins} bytes under a 1 MB quota`);
      assert.ok(bins > MB - PIECE - 1000, `${bins} bytes: the quota was spent to within a write`);

      const post = (u, sid, auth) => fetch(u, { method: "POST", headers: { "content-type": "application/json",
        accept: "application/json, text/event-stream", "mcp-session-id": sid, "mcp-protocol-version": "2025-06-18", ...auth },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }) });
      // another token of the same tenant cannot take a session over, on any instance
      const v1 = eight[0];
      const sid = v1.t.sessionId;
      for (const b of burrows) {
        const r = await post(b.url, sid, { authorization: `Bearer ${OTHER}` });
        assert.equal(r.status, 404, `${b.url}: ${r.status} ${await r.text()}`);
      }
      // a session deleted through one instance is gone on every instance
      await v1.t.terminateSession();
      for (const b of burrows) {
        const r = await fetch(b.url, { method: "POST", headers: { "content-type": "application/json", accept: "application/json, text/event-stream",
          "mcp-session-id": sid, "mcp-protocol-version": "2025-06-18", ...AUTH },
          body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }) });
        const body = await r.text();
        assert.ok(r.status === 404 || /-32001/.test(body), `${b.url}: ${r.status} ${body}`);
      }
      // and an id no instance made is 404 everywhere (never asked of the store when malformed)
      for (const bad of ["0123456789abcdef0123456789abcdef", "../../session/x", "A".repeat(400)]) {
        const r = await fetch(url, { method: "POST", headers: { "content-type": "application/json", accept: "application/json, text/event-stream",
          "mcp-session-id": bad, "mcp-protocol-version": "2025-06-18", ...AUTH },
          body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }) });
        assert.equal(r.status, 404, bad);
      }
    } finally {
      for (const { c } of clients) await c.close().catch(() => {});
      await cl.stop();
    }
  });

test("kill -9 of one instance: every session goes on through the others, no compare-and-set update lost",
  { timeout: 300_000 }, async () => {
    const cl = await cluster({ checks: true });
    const clients = [];
    try {
      fs.writeFileSync(path.join(cl.ws, "counter.txt"), "0\n");
      for (const era of ["v1", "v1", "v2", "v2auto"]) clients.push(await connect(cl.url, era, `k${clients.length}-${era}`));
      const ROUNDS = 24, KILL_AT = 8;
      let successes = 0, unknown = 0, killed = false;
      const after = clients.map(() => ({ ok: 0, failed: [] }));
      // the instance to kill: the one that last answered the first client
      // (it holds that session's cached state)
      const victim = async () => {
        const who = served.filter((s) => s.tag === clients[0].tag && s.who).at(-1).who;
        const b = cl.burrows[Number(who.slice(1)) - 1];
        b.proc.kill("SIGKILL");
        await new Promise((r) => (b.proc.exitCode !== null || b.proc.signalCode ? r() : b.proc.on("exit", r)));
      };
      for (let round = 0; round < ROUNDS; round++) {
        // killed while this round's calls are in flight
        const killing = round === KILL_AT ? victim().then(() => { killed = true; }) : null;
        await Promise.all([killing, ...clients.map(async ({ c, tag }, i) => {
          try {
            const r = await c.callTool({ name: "read_file", arguments: { path: "counter.txt" } });
            const n = Number(text(r).split("\t")[1]);
            const w = await c.callTool({ name: "write_file", arguments: { path: "counter.txt",
              content: `${n + 1}\n`, expected_hash: r.structuredContent.content_hash } });
            if (!w.isError) successes++;
            else assert.equal(w._meta?.["burrow/code"], "HASH_MISMATCH", `${tag}: ${JSON.stringify(w)}`);
            if (killed) after[i].ok++;
          } catch (e) {
            if (e.code === "ERR_ASSERTION") throw e;
            unknown++; // in flight when its instance died: its outcome is not known
            if (killed || killing) after[i].failed.push(String(e.message || e));
          }
        })]);
      }
      const final = Number(fs.readFileSync(path.join(cl.ws, "counter.txt"), "utf8").trim());
      console.log(`kill -9 at round ${KILL_AT} of ${ROUNDS}: counter ${final}, ${successes} compare-and-sets succeeded, `
        + `${unknown} calls failed; after the kill: ${after.map((a) => `${a.ok} ok/${a.failed.length} failed`).join(", ")}`);
      assert.ok(final >= successes && final <= successes + unknown,
        `counter ${final}: ${successes} compare-and-sets succeeded, ${unknown} calls of unknown outcome`);
      for (const [i, a] of after.entries()) {
        // at most the calls in flight when the instance died fail: one round's
        assert.ok(a.failed.length <= 2, `${clients[i].tag}: ${a.failed.length} calls failed after the kill: ${a.failed.join(" | ")}`);
        assert.ok(a.ok >= ROUNDS - KILL_AT - 2, `${clients[i].tag}: ${a.ok} calls after the kill`);
      }
      // the sessions went on through the two left
      for (const { t, era, tag } of clients) {
        if (era === "v2auto") continue;
        const late = served.filter((s) => s.sid === t.sessionId && s.who).slice(-6).map((s) => s.who);
        assert.ok(late.length > 0, `${tag} served after the kill`);
      }
    } finally {
      for (const { c } of clients) await c.close().catch(() => {});
      await cl.stop();
    }
  });
