// End-to-end (issue 45, "a stream resumes on another instance"): three
// `burrow mcp --http` instances on one Redis (a redis-server this test
// starts on a free port), HAProxy with `balance roundrobin` and no stick
// table, raw HTTP so each cut and each Last-Event-ID is the test's own:
//   - a call's stream cut mid-call (its elicitation out, the call waiting)
//     and resumed with Last-Event-ID through another instance: every event
//     after the id exactly once, then the call's answer;
//   - messages the server sends on a session's GET stream from any
//     instance reach that stream where it is held; kill -9 of that
//     instance: the client resumes through the proxy on another one and
//     gets what was logged meanwhile, then what comes next;
//   - another token's Last-Event-ID is 404, a forged one 400, and the
//     store's log of a session stays within its caps (asserted on Redis).
//
//   cd test/e2e && node --test streams_shared.test.mjs     (needs redis-server, haproxy)

import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { sseEvents, waitFor } from "./http_helpers.mjs";
import { REDIS_CLI, cluster as threeOnRedis } from "./redis_helpers.mjs";

const TOKEN = "token-shared-streams-0123456789ab";
const OTHER = "another-token-of-the-same-tenant-42";
const LOG_BYTES = 256 * 1024; // httpevlog.c's cap on a session's logged event data


// Redis, three instances on one folder (an "ask" policy on held/), HAProxy
// round robin without a stick table (with checks: a dead instance is out).
function cluster({ checks = false, share = null } = {}) {
  return threeOnRedis({ prefix: "burrow-shared-streams-", checks, setup: ({ tmp, ws, rport }) => {
    fs.writeFileSync(path.join(ws, "big.txt"), ("0123456789abcdef".repeat(4) + "\n").repeat(400)); // 26 KB
    fs.writeFileSync(path.join(tmp, "approval.key"), "shared streams e2e key, 32 bytes or more\n");
    const sha = crypto.createHash("sha256").update(TOKEN).digest("hex");
    const sha2 = crypto.createHash("sha256").update(OTHER).digest("hex");
    return "roots: [shared]\n"
      + "policies: [./ask.lua]\n"
      + `state: {url: "redis://127.0.0.1:${rport}/0", timeout: 2s${share ? `, max_bytes_per_tenant: ${share}` : ""}}\n`
      + `http:\n  approval_key_file: approval.key\n  tokens:\n    - {sha256: ${sha}}\n    - {sha256: ${sha2}}\n`;
  } });
}

const headers = (sid, token = TOKEN, extra = {}) => ({
  "content-type": "application/json", accept: "application/json, text/event-stream",
  authorization: `Bearer ${token}`, "mcp-protocol-version": "2025-11-25",
  ...(sid ? { "mcp-session-id": sid } : {}), ...extra,
});

// A POST read to its end: {status, who, sid, messages}.
async function post(url, sid, body) {
  const r = await fetch(url, { method: "POST", headers: headers(sid), body: JSON.stringify(body) });
  const out = { status: r.status, who: r.headers.get("x-served-by"), sid: r.headers.get("mcp-session-id"), messages: [] };
  if ((r.headers.get("content-type") || "").includes("text/event-stream")) {
    for await (const ev of sseEvents(r.body)) if (ev.data) out.messages.push(JSON.parse(ev.data));
  } else {
    const t = await r.text();
    if (t) out.messages.push(JSON.parse(t));
  }
  return out;
}

async function session(url) {
  const init = await post(url, null, { jsonrpc: "2.0", id: 1, method: "initialize", params: {
    protocolVersion: "2025-11-25", clientInfo: { name: "streams", version: "1" },
    capabilities: { elicitation: {}, roots: { listChanged: true } } } });
  assert.equal(init.status, 200, JSON.stringify(init));
  assert.ok(init.sid, "a session id");
  const n = await post(url, init.sid, { jsonrpc: "2.0", method: "notifications/initialized" });
  assert.equal(n.status, 202);
  return init.sid;
}

// An SSE stream read in the background: its events, whether it ended.
function reading(r) {
  const s = { status: r.status, who: r.headers.get("x-served-by"), events: [], ended: false, ctl: null };
  if (r.status !== 200) return s;
  // read without a timer of its own (sseEvents' would keep the test
  // alive after the abort that ends this stream)
  (async () => {
    let buf = "";
    try {
      for await (const chunk of r.body.pipeThrough(new TextDecoderStream())) {
        buf += chunk;
        let i;
        while ((i = buf.indexOf("\n\n")) >= 0) {
          const block = buf.slice(0, i);
          buf = buf.slice(i + 2);
          if (block.startsWith(":")) continue;
          const ev = { data: "" };
          for (const line of block.split("\n")) {
            const k = line.indexOf(":");
            const name = line.slice(0, k), val = line.slice(k + 1).replace(/^ /, "");
            if (name === "id") ev.id = val;
            else if (name === "data") ev.data += val;
          }
          s.events.push(ev);
        }
      }
    } catch { /* cut */ }
    s.ended = true;
  })();
  return s;
}

// A GET through the proxy (Last-Event-ID last, or none), asked again until
// an instance other than `not` takes it.
async function getStream(url, sid, last, not = null, token = TOKEN) {
  for (let i = 0; i < 12; i++) {
    const ctl = new AbortController();
    const r = await fetch(url, { method: "GET", signal: ctl.signal,
      headers: headers(sid, token, last ? { "last-event-id": last, accept: "text/event-stream" } : { accept: "text/event-stream" }) });
    const who = r.headers.get("x-served-by");
    if (not && who === not && r.status === 200) { ctl.abort(); continue; }
    const s = reading(r);
    s.ctl = ctl;
    if (r.status !== 200) s.body = await r.text().catch(() => "");
    return s;
  }
  throw new Error(`the proxy never took the GET to an instance other than ${not}`);
}

const seqOf = (id) => Number(id.split("-")[1]);
const streamOf = (id) => id.split("-")[0];

test("a call's stream cut mid-call resumes with Last-Event-ID through another instance: every later event once, then the answer",
  { timeout: 180_000 }, async () => {
    const cl = await cluster();
    try {
      const sid = await session(cl.url);
      // the call: its elicitation goes out, then it waits for the answer
      const ctl = new AbortController();
      const r = await fetch(cl.url, { method: "POST", signal: ctl.signal, headers: headers(sid),
        body: JSON.stringify({ jsonrpc: "2.0", id: 7, method: "tools/call",
          params: { name: "write_file", arguments: { path: "held/a.txt", content: "approved\n" } } }) });
      assert.equal(r.status, 200);
      const holder = r.headers.get("x-served-by");
      const first = [];
      let ask;
      for await (const ev of sseEvents(r.body)) {
        first.push(ev);
        const m = ev.data ? JSON.parse(ev.data) : null;
        if (m?.method === "elicitation/create") { ask = m; break; }
      }
      ctl.abort(); // the cut: the call goes on at its instance
      assert.ok(ask, `the elicitation on the call's stream: ${JSON.stringify(first)}`);
      const primed = first[0].id; // "N-0": the resumption point before any message
      assert.match(primed, /^\d+-0$/, JSON.stringify(first));
      const N = streamOf(primed);

      // attacks first: another token of the tenant, a forged id, an overlong one
      const foreign = await getStream(cl.url, sid, primed, null, OTHER);
      assert.equal(foreign.status, 404, "another token's Last-Event-ID for this session");
      foreign.ctl.abort();
      for (const bad of ["9".repeat(200) + "-1", `${N}-${"9".repeat(40)}`, `${N}-1; DEL x`, "-1-1"]) {
        const f = await getStream(cl.url, sid, bad);
        assert.equal(f.status, 400, `forged Last-Event-ID ${bad.slice(0, 40)}: ${f.body}`);
        f.ctl.abort();
      }

      // resumed through another instance: the elicitation again (after N-0)
      const g = await getStream(cl.url, sid, primed, holder);
      assert.equal(g.status, 200, `the resumed stream on ${g.who} (the call's on ${holder}): ${g.body}`);
      assert.notEqual(g.who, holder);
      await waitFor(() => g.events.some((e) => e.data && JSON.parse(e.data).method === "elicitation/create"),
        () => `the elicitation replayed on ${g.who}: ${JSON.stringify(g.events)}`);
      // the answer to it, through whichever instance the proxy picks
      const a = await post(cl.url, sid, { jsonrpc: "2.0", id: ask.id, result: { action: "accept", content: { approve: true } } });
      assert.equal(a.status, 202, JSON.stringify(a));
      const answer = await waitFor(() => g.events.map((e) => (e.data ? JSON.parse(e.data) : null)).find((m) => m && m.id === 7 && !m.method),
        () => `the call's answer on the resumed stream: ${JSON.stringify(g.events)}`);
      assert.equal(answer.result?.isError, undefined, JSON.stringify(answer));
      assert.equal(fs.readFileSync(path.join(cl.ws, "held", "a.txt"), "utf8"), "approved\n");
      const ids = g.events.filter((e) => e.data).map((e) => e.id);
      assert.ok(ids.every((id) => streamOf(id) === N && seqOf(id) > 0), JSON.stringify(ids));
      assert.equal(new Set(ids).size, ids.length, `each event once: ${JSON.stringify(ids)}`);
      assert.deepEqual(ids.map(seqOf), [...ids.map(seqOf)].sort((x, y) => x - y), "in order");
      assert.equal(seqOf(ids[0]), 1, `from the first after ${primed}: ${JSON.stringify(ids)}`);
      g.ctl.abort();

      // the log stays within its caps whatever the session does: 30 calls of 24 KB answers
      for (let i = 0; i < 30; i++) {
        const rr = await post(cl.url, sid, { jsonrpc: "2.0", id: 100 + i, method: "tools/call",
          params: { name: "read_file", arguments: { path: "big.txt" } } });
        assert.equal(rr.status, 200);
      }
      if (REDIS_CLI) {
        const cli = (...args) => spawnSync(REDIS_CLI, ["-p", String(cl.rport), ...args], { encoding: "utf8" }).stdout.trim();
        const keys = cli("--scan", "--pattern", `*:e:events/${sid}`).split("\n").filter(Boolean);
        assert.equal(keys.length, 1, `one log for the session: ${keys}`);
        const rec = cli("--raw", "HGET", keys[0], "d");
        const bytes = Number(cli("HSTRLEN", keys[0], "d"));
        assert.ok(bytes > 100_000 && bytes <= LOG_BYTES + 16 * 1024, `the log's bytes ${bytes} within its cap`);
        const streams = (rec.match(/^s \d+ [01] \d+$/gm) || []).length;
        assert.ok(streams >= 2 && streams <= 17, `${streams} streams logged`);
        // DELETE: the log goes with the session
        const d = await fetch(cl.url, { method: "DELETE", headers: headers(sid) });
        assert.equal(d.status, 200);
        assert.equal(cli("--scan", "--pattern", `*:e:events/${sid}`), "", "the log deleted with the session");
      }
    } finally {
      await cl.stop();
    }
  });

test("the GET stream hears the server's messages from every instance; kill -9 of its instance: resumed elsewhere with Last-Event-ID",
  { timeout: 180_000 }, async () => {
    const cl = await cluster({ checks: true });
    try {
      const sid = await session(cl.url);
      const g = await getStream(cl.url, sid, null);
      assert.equal(g.status, 200, g.body);
      const holder = g.who;
      const asks = (s) => s.events.filter((e) => e.data && JSON.parse(e.data).method === "roots/list");
      // each roots/list_changed makes the server ask roots/list on the GET
      // stream, from the instance the proxy gave the notification to
      const changed = async () => {
        const n = await post(cl.url, sid, { jsonrpc: "2.0", method: "notifications/roots/list_changed" });
        assert.equal(n.status, 202, JSON.stringify(n));
        return n.who;
      };
      const base = asks(g).length; // the one after initialized, if it was sent here
      const via = [];
      for (let i = 0; i < 3; i++) via.push(await changed());
      assert.ok(via.some((w) => w !== holder), `some asked through another instance than ${holder}: ${via}`);
      await waitFor(() => asks(g).length >= base + 3,
        () => `3 roots/list on the GET stream held by ${holder} (asked via ${via}): ${JSON.stringify(g.events)}`);
      const lastId = asks(g).at(-1).id;

      // the instance holding the stream dies
      const b = cl.burrows[Number(holder.slice(1)) - 1];
      b.proc.kill("SIGKILL");
      await new Promise((r) => (b.proc.exitCode !== null || b.proc.signalCode ? r() : b.proc.on("exit", r)));
      g.ctl.abort();
      for (let i = 0; i < 2; i++) await changed(); // logged while no stream is open
      const h = await getStream(cl.url, sid, lastId, holder);
      assert.equal(h.status, 200, `resumed from ${lastId} on ${h.who}: ${h.body}`);
      await waitFor(() => asks(h).length >= 2, () => `the 2 logged meanwhile, replayed on ${h.who}: ${JSON.stringify(h.events)}`);
      await changed(); // and one more, live
      await waitFor(() => asks(h).length >= 3, () => `the next one, live on ${h.who}: ${JSON.stringify(h.events)}`);
      const ids = h.events.filter((e) => e.data).map((e) => e.id);
      assert.equal(new Set(ids).size, ids.length, `each once: ${JSON.stringify(ids)}`);
      assert.ok(ids.every((id) => streamOf(id) === "0" && seqOf(id) > seqOf(lastId)), `all after ${lastId}: ${JSON.stringify(ids)}`);
      assert.equal(asks(h).length, 3, JSON.stringify(ids));
      h.ctl.abort();

      // the store down: a resumption is refused with what to do, never a silent nothing
      await cl.redis.stop();
      const down = await getStream(cl.url, sid, ids.at(-1));
      assert.equal(down.status, 503, down.body);
      assert.match(down.body, /STORE_UNAVAILABLE/);
    } finally {
      await cl.stop();
    }
  });

// One token's streams must not fill what its tenant's other tokens need
// in the store (issue 45: "one client locks its tenant out" is what it
// fixed): the logs of a tenant's streams hold at most a quarter of its
// share (the events budget); past it a stream keeps none of its events
// there, and the tenant's other token still opens sessions and calls.
test("one token's stream logs stay within the tenant's events budget; another token of the tenant is served",
  { timeout: 180_000 }, async () => {
    const SHARE = 1024 * 1024, BUDGET = SHARE / 4;
    const cl = await cluster({ share: "1MiB" });
    try {
      // five sessions, each answering 15 reads of 26 KB: about 2 MB of events wanted
      const sids = [];
      for (let k = 0; k < 5; k++) sids.push(await session(cl.url));
      await Promise.all(sids.map(async (sid, k) => {
        for (let i = 0; i < 15; i++) {
          const rr = await post(cl.url, sid, { jsonrpc: "2.0", id: 1000 * k + i, method: "tools/call",
            params: { name: "read_file", arguments: { path: "big.txt" } } });
          assert.equal(rr.status, 200);
          assert.equal(rr.messages.at(-1)?.result?.isError, undefined, JSON.stringify(rr.messages.at(-1)).slice(0, 300));
        }
      }));
      if (REDIS_CLI) {
        const cli = (...args) => spawnSync(REDIS_CLI, ["-p", String(cl.rport), ...args], { encoding: "utf8" }).stdout.trim();
        const keys = cli("--scan", "--pattern", "*:e:events/*").split("\n").filter(Boolean);
        const held = keys.reduce((n, k) => n + Number(cli("HSTRLEN", k, "d")), 0);
        assert.ok(held <= BUDGET + 16 * 1024, `the tenant's logs hold ${held} bytes, budget ${BUDGET}`);
        assert.ok(held > BUDGET / 4, `the logs were used: ${held} bytes`);
      }
      // the tenant's other token: a session of its own and a call, served
      const r = await fetch(cl.url, { method: "POST", headers: headers(null, OTHER), body: JSON.stringify({
        jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-11-25",
          clientInfo: { name: "other", version: "1" }, capabilities: {} } }) });
      const body = await r.text();
      assert.equal(r.status, 200, body);
      const osid = r.headers.get("mcp-session-id");
      const h = headers(osid, OTHER);
      assert.equal((await fetch(cl.url, { method: "POST", headers: h,
        body: JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }) })).status, 202);
      const c = await fetch(cl.url, { method: "POST", headers: h, body: JSON.stringify({ jsonrpc: "2.0", id: 2,
        method: "tools/call", params: { name: "stat", arguments: { path: "big.txt" } } }) });
      assert.equal(c.status, 200);
      assert.match(await c.text(), /size: 26000/);
    } finally {
      await cl.stop();
    }
  });
