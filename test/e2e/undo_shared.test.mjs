// End-to-end (issue 45, "undo_edit works from any instance"): three
// `burrow mcp --http` instances on one Redis (a redis-server this test
// starts on a free port), HAProxy with `balance roundrobin` and no stick
// table. A session client (SDK 1.x) and a stateless one (v2 with
// versionNegotiation auto) each change a file three times through the
// proxy; then undo_edit through each instance directly, in turn, takes the
// changes back newest first (asserted on the files). Nobody else undoes
// them: another session of the same token, another token of the same
// tenant, another tenant (whose root is the same folder). An edit_files
// change of three files made through one instance is undone whole, in one
// call, through another; two instances undoing it at once undo it once.
// A file over the
// 1 MiB a shared record keeps says so on undo; with Redis stopped an edit
// is refused (fail closed, the file untouched) and undo_edit says
// STORE_UNAVAILABLE, and both work again once it is back. Issue 44's ten
// files: an edit_files change of ten made through one instance is undone
// whole by one undo_edit through another, for a session and a stateless
// client, and by no other token or tenant; a file of it changed since
// refuses the whole undo, naming it,
// and once it is back as the change left it a third instance undoes all ten.
//
//   cd test/e2e && node --test undo_shared.test.mjs     (needs redis-server, haproxy)

import { test } from "node:test";
import assert from "node:assert/strict";
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Client as Client1 } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport as Transport1 } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { Client as Client2, StreamableHTTPClientTransport as Transport2 } from "@modelcontextprotocol/client";
import { HEADERS, freePort, haproxyConfig, sseEvents, startHttp, waitFor } from "./http_helpers.mjs";
import { cluster, needHaproxy, needRedis, redisOn, startHaproxy, stopped } from "./redis_helpers.mjs";

const TOKENS = { one: "token-undo-shared-one-0123456789", two: "token-undo-shared-two-0123456789",
  other: "token-undo-shared-other-01234567" };
const sha = (t) => crypto.createHash("sha256").update(t).digest("hex");
const auth = (t) => ({ authorization: `Bearer ${t}` });

const text = (r) => r.content.map((b) => b.text).join("");
const code = (r) => r._meta?.["burrow/code"];

async function session1(url, token) {
  const c = new Client1({ name: "undo-v1", version: "1" }, { capabilities: {} });
  const t = new Transport1(new URL(url), { requestInit: { headers: auth(token) } });
  await c.connect(t);
  return { c, t };
}

async function stateless(url, token) {
  const c = new Client2({ name: "undo-v2", version: "1" }, { capabilities: {}, versionNegotiation: { mode: "auto" } });
  await c.connect(new Transport2(new URL(url), { requestInit: { headers: auth(token) } }));
  assert.equal(c.getNegotiatedProtocolVersion(), "2026-07-28");
  return c;
}

// One tools/call of session sid straight to one instance (the SDK's
// transport keeps one URL): its result.
let nextId = 100;
async function callIn(url, sid, token, name, args) {
  const id = nextId++;
  const r = await fetch(url, { method: "POST", headers: { ...HEADERS, ...auth(token), "mcp-session-id": sid,
    "mcp-protocol-version": "2025-11-25" }, body: JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call",
    params: { name, arguments: args } }) });
  assert.equal(r.status, 200, `${url}: ${r.status} ${r.status === 200 ? "" : await r.text()}`);
  if (!(r.headers.get("content-type") || "").includes("event-stream")) return (await r.json()).result;
  for await (const ev of sseEvents(r.body)) {
    if (!ev.data) continue;
    const m = JSON.parse(ev.data);
    if (m.id === id) return m.result ?? assert.fail(JSON.stringify(m));
  }
  assert.fail(`${url}: no answer to ${name}`);
}

test("undo_edit from any of three instances: a session's and a stateless client's edits, taken back in order, by no one else",
  { timeout: 300_000 }, async () => {
    needRedis();
    needHaproxy();
    const tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "burrow-undo-shared-")));
    const procs = [], burrows = [], closers = [];
    const redis = redisOn(tmp, await freePort()), rport = redis.port;
    try {
      await redis.start();
      const ws = path.join(tmp, "shared");
      fs.mkdirSync(ws);
      // another tenant, whose root is the same folder: the same paths
      fs.writeFileSync(path.join(tmp, "other.yaml"), "roots: [shared]\n");
      fs.writeFileSync(path.join(tmp, "burrow.yaml"), "roots: [shared]\n"
        + `state: {url: "redis://127.0.0.1:${rport}/0", timeout: 1s, connect_timeout: 1s}\n`
        + "http:\n  tenants:\n    other: {config: other.yaml}\n  tokens:\n"
        + `    - {sha256: ${sha(TOKENS.one)}}\n    - {sha256: ${sha(TOKENS.two)}}\n`
        + `    - {sha256: ${sha(TOKENS.other)}, tenant: other}\n`);
      for (let i = 0; i < 3; i++) burrows.push(await startHttp(["--config", path.join(tmp, "burrow.yaml")]));
      const port = await freePort();
      procs.push(await startHaproxy(tmp, port, haproxyConfig(port, burrows.map((b) => b.port), { sticky: false })));
      const url = `http://127.0.0.1:${port}/mcp`;
      const file = (n) => path.join(ws, n);
      const read = (n) => (fs.existsSync(file(n)) ? fs.readFileSync(file(n), "utf8") : null);

      // three changes each through the proxy (each a call of its own,
      // round robin: every instance records some)
      const s = await session1(url, TOKENS.one);
      closers.push(() => s.c.close());
      const v2 = await stateless(url, TOKENS.one);
      closers.push(() => v2.close());
      for (const [c, n] of [[s.c, "s.txt"], [v2, "t.txt"]]) {
        const steps = [["write_file", { path: n, content: "one\n" }],
          ["edit_file", { path: n, old_text: "one", new_text: "two" }],
          ["append_file", { path: n, content: "three\n" }]];
        for (const [tool, args] of steps) {
          const r = await c.callTool({ name: tool, arguments: args });
          assert.ok(!r.isError, `${n} ${tool}: ${JSON.stringify(r)}`);
        }
        assert.equal(read(n), "two\nthree\n");
      }

      // nobody else undoes them: another session of the same token,
      // another token of the tenant (a session and stateless), another tenant
      const others = [await session1(url, TOKENS.one), await session1(url, TOKENS.two), await session1(url, TOKENS.other)];
      for (const o of others) closers.push(() => o.c.close());
      const strangers = [await stateless(url, TOKENS.two), await stateless(url, TOKENS.other)];
      for (const o of strangers) closers.push(() => o.close());
      for (const c of [...others.map((o) => o.c), ...strangers]) {
        for (const n of ["s.txt", "t.txt"]) {
          for (let i = 0; i < 3; i++) { // through each instance in turn
            const r = await c.callTool({ name: "undo_edit", arguments: { path: n } });
            assert.ok(r.isError && /no write or edit of this path to undo/.test(text(r)), `${n}: ${JSON.stringify(r)}`);
          }
        }
      }
      assert.equal(read("s.txt"), "two\nthree\n");
      assert.equal(read("t.txt"), "two\nthree\n");

      // undo_edit through each instance directly, in turn: newest first
      const sid = s.t.sessionId;
      const want = ["two\n", "one\n", null];
      for (let i = 0; i < 3; i++) {
        const r = await callIn(burrows[i].url, sid, TOKENS.one, "undo_edit", { path: "s.txt" });
        assert.ok(!r.isError, `session, instance ${i}: ${JSON.stringify(r)}`);
        assert.equal(read("s.txt"), want[i], `session, after the undo through instance ${i}`);
        const c = await stateless(burrows[i].url, TOKENS.one);
        closers.push(() => c.close());
        const u = await c.callTool({ name: "undo_edit", arguments: { path: "t.txt" } });
        assert.ok(!u.isError, `stateless, instance ${i}: ${JSON.stringify(u)}`);
        assert.equal(read("t.txt"), want[i], `stateless, after the undo through instance ${i}`);
        assert.equal(u.structuredContent.remaining, 2 - i);
      }
      const none = await callIn(burrows[0].url, sid, TOKENS.one, "undo_edit", { path: "s.txt" });
      assert.ok(none.isError && /no write or edit of this path to undo/.test(text(none)), JSON.stringify(none));

      // an edit_files change of three files is one undo step on every
      // instance: made through one, undone whole through another
      const direct = [];
      for (const b of burrows) {
        const c = await stateless(b.url, TOKENS.one);
        closers.push(() => c.close());
        direct.push(c);
      }
      const trio = ["g1.txt", "g2.txt", "g3.txt"];
      const change = (from, to) => ({ files: trio.map((n) => ({ path: n, edits: [{ old_text: from, new_text: to }] })) });
      for (const n of trio) {
        const w = await direct[0].callTool({ name: "write_file", arguments: { path: n, content: `v1 ${n}\n` } });
        assert.ok(!w.isError, JSON.stringify(w));
      }
      const ef = await direct[0].callTool({ name: "edit_files", arguments: change("v1", "v2") });
      assert.ok(!ef.isError, JSON.stringify(ef));
      for (const n of trio) assert.equal(read(n), `v2 ${n}\n`);
      const ug = await direct[1].callTool({ name: "undo_edit", arguments: { path: "g2.txt" } });
      assert.ok(!ug.isError, JSON.stringify(ug));
      assert.equal(ug.structuredContent.files, 3, JSON.stringify(ug));
      for (const n of trio) assert.equal(read(n), `v1 ${n}\n`, `${n} back in the one undo`);
      // the write before it is the next undo of each file, still there
      const u1 = await direct[2].callTool({ name: "undo_edit", arguments: { path: "g1.txt" } });
      assert.ok(!u1.isError, JSON.stringify(u1));
      assert.equal(read("g1.txt"), null);

      // two instances undoing one change at once: it is undone once, whole,
      // and no older record is taken in passing. (Had the calls not
      // overlapped, the second undoes its own file's change before: a step
      // of its own, which the counts below allow for.)
      for (const n of ["g2.txt", "g3.txt"]) {
        const w = await direct[0].callTool({ name: "edit_file", arguments: { path: n, old_text: "v1", new_text: "v1b" } });
        assert.ok(!w.isError, JSON.stringify(w));
      }
      const w1 = await direct[0].callTool({ name: "write_file", arguments: { path: "g1.txt", content: "v1b g1.txt\n" } });
      assert.ok(!w1.isError, JSON.stringify(w1));
      const ef2 = await direct[0].callTool({ name: "edit_files", arguments: change("v1b", "v3") });
      assert.ok(!ef2.isError, JSON.stringify(ef2));
      const racers = [["g1.txt", direct[1]], ["g3.txt", direct[2]]];
      const raced = await Promise.all(racers.map(([n, c]) => c.callTool({ name: "undo_edit", arguments: { path: n } })));
      const whole = raced.filter((r) => !r.isError && r.structuredContent.files === 3);
      assert.equal(whole.length, 1, `one undo of the change: ${JSON.stringify(raced)}`);
      const other = raced.find((r) => r !== whole[0]);
      const extra = !other.isError ? racers[raced.indexOf(other)][0] : null; // a later step of its own file
      if (other.isError) assert.match(text(other), /another call (is undoing now|has undone)/, JSON.stringify(other));
      else assert.equal(other.structuredContent.files, undefined, JSON.stringify(other));
      // what each file's history holds now: g1 its write; g2, g3 a write and an edit
      const left = { "g1.txt": 1, "g2.txt": 2, "g3.txt": 2 };
      if (extra) left[extra]--;
      for (const n of trio) {
        let steps = 0;
        for (;;) {
          const r = await direct[steps % 3].callTool({ name: "undo_edit", arguments: { path: n } });
          if (r.isError) {
            assert.match(text(r), /no write or edit of this path to undo/, `${n}: ${JSON.stringify(r)}`);
            break;
          }
          steps++;
        }
        assert.equal(steps, left[n], `${n}: every older change still there to undo, once`);
        assert.equal(read(n), null, `${n}: undone to before its first write`);
      }

      // a file over what a shared record keeps: its undo says so
      const big = "x".repeat(1_200_000);
      for (const content of [big, "small\n"]) {
        const w = await v2.callTool({ name: "write_file", arguments: { path: "big.txt", content } });
        assert.ok(!w.isError, JSON.stringify(w).slice(0, 300));
      }
      const tl = await v2.callTool({ name: "undo_edit", arguments: { path: "big.txt" } });
      assert.ok(tl.isError && code(tl) === "TOO_LARGE", JSON.stringify(tl));
      assert.match(text(tl), /1200000 bytes\) was not kept: the shared undo store keeps at most \d+ bytes of a file/);
      assert.equal(read("big.txt"), "small\n");

      // the store stopped: an edit is refused (nothing changed), an undo
      // says why; both work again once it is back, burrow not restarted
      const e1 = await v2.callTool({ name: "write_file", arguments: { path: "down.txt", content: "first\n" } });
      assert.ok(!e1.isError, JSON.stringify(e1));
      await redis.stop();
      const e2 = await v2.callTool({ name: "edit_file", arguments: { path: "down.txt", old_text: "first", new_text: "second" } });
      assert.ok(e2.isError && code(e2) === "STORE_UNAVAILABLE", JSON.stringify(e2));
      assert.match(text(e2), /the shared undo store .* does not answer .*nothing was changed/);
      assert.equal(read("down.txt"), "first\n");
      // edit_files too, an edit or a removal among its files: refused, nothing changed
      for (const f of [{ path: "down.txt", edits: [{ old_text: "first", new_text: "second" }] }, { path: "down.txt", delete: true }]) {
        const ef = await v2.callTool({ name: "edit_files", arguments: { files: [f] } });
        assert.ok(ef.isError && code(ef) === "STORE_UNAVAILABLE", JSON.stringify(ef));
        assert.equal(read("down.txt"), "first\n");
      }
      const u2 = await v2.callTool({ name: "undo_edit", arguments: { path: "down.txt" } });
      assert.ok(u2.isError && code(u2) === "STORE_UNAVAILABLE", JSON.stringify(u2));
      assert.equal(read("down.txt"), "first\n");
      await redis.start(); // empty: what it held is gone with it
      await waitFor(async () => !(await v2.callTool({ name: "edit_file",
        arguments: { path: "down.txt", old_text: "first", new_text: "second" } })).isError, "an edit once the store is back");
      const u3 = await v2.callTool({ name: "undo_edit", arguments: { path: "down.txt" } });
      assert.ok(!u3.isError, JSON.stringify(u3));
      assert.equal(read("down.txt"), "first\n");
    } finally {
      for (const close of closers) await Promise.resolve().then(close).catch(() => {});
      for (const b of burrows) await b.stop();
      for (const p of procs) await stopped(p);
      await redis.stop();
      fs.rmSync(tmp, { recursive: true, force: true });
    }
  });

test("issue 44 over a shared store: ten files changed through one instance, all ten back by one undo_edit through another; a stale one refuses the whole undo",
  { timeout: 300_000 }, async () => {
    const c = await cluster({ prefix: "burrow-undo-ten-", setup: ({ tmp, rport }) => {
      fs.writeFileSync(path.join(tmp, "other.yaml"), "roots: [shared]\n"); // another tenant, the same folder
      return "roots: [shared]\n"
        + `state: {url: "redis://127.0.0.1:${rport}/0", timeout: 1s, connect_timeout: 1s}\n`
        + `http:\n  tenants:\n    other: {config: other.yaml}\n  tokens:\n    - {sha256: ${sha(TOKENS.one)}}\n`
        + `    - {sha256: ${sha(TOKENS.two)}}\n    - {sha256: ${sha(TOKENS.other)}, tenant: other}\n`;
    } });
    const closers = [];
    try {
      const names = Array.from({ length: 10 }, (_, i) => `m${String(i + 1).padStart(2, "0")}.py`);
      const file = (n) => path.join(c.ws, n);
      const put = (v) => { for (const n of names) fs.writeFileSync(file(n), `import ${v}_name  # ${n}\n`); };
      const allAre = (v, what) => { for (const n of names) assert.equal(fs.readFileSync(file(n), "utf8"), `import ${v}_name  # ${n}\n`, `${what}: ${n}`); };
      const rename = { files: names.map((n) => ({ path: n, edits: [{ old_text: "old_name", new_text: "new_name" }] })) };

      // a session (made through the proxy): the change through instance 0,
      // the undo through instance 1, nothing left for instance 2
      put("old");
      const s = await session1(c.url, TOKENS.one);
      closers.push(() => s.c.close());
      const sid = s.t.sessionId;
      const ef = await callIn(c.burrows[0].url, sid, TOKENS.one, "edit_files", rename);
      assert.ok(!ef.isError, JSON.stringify(ef));
      allAre("new", "session: changed");
      const u = await callIn(c.burrows[1].url, sid, TOKENS.one, "undo_edit", { path: names[3] });
      assert.ok(!u.isError, JSON.stringify(u));
      assert.equal(u.structuredContent.files, 10, JSON.stringify(u));
      allAre("old", "session: all ten back by one undo");
      for (const n of names) {
        const r = await callIn(c.burrows[2].url, sid, TOKENS.one, "undo_edit", { path: n });
        assert.ok(r.isError && /no write or edit of this path to undo/.test(text(r)), `${n}: ${JSON.stringify(r)}`);
      }

      // a stateless client, straight to each instance: the change through
      // 0; file 7 changed by someone else; the undo through 1 refuses
      // whole, naming it; file 7 back as the change left it, 2 undoes all ten
      const direct = [];
      for (const b of c.burrows) {
        const v2 = await stateless(b.url, TOKENS.one);
        closers.push(() => v2.close());
        direct.push(v2);
      }
      const ef2 = await direct[0].callTool({ name: "edit_files", arguments: rename });
      assert.ok(!ef2.isError, JSON.stringify(ef2));
      allAre("new", "stateless: changed");
      // nobody else undoes it: another token of the tenant, another tenant
      for (const t of [TOKENS.two, TOKENS.other]) {
        const o = await stateless(c.burrows[1].url, t);
        closers.push(() => o.close());
        const r = await o.callTool({ name: "undo_edit", arguments: { path: names[0] } });
        assert.ok(r.isError && /no write or edit of this path to undo/.test(text(r)), JSON.stringify(r));
      }
      allAre("new", "stateless: undone by no one else");
      const stale = names[6];
      fs.writeFileSync(file(stale), "someone else's\n");
      const r = await direct[1].callTool({ name: "undo_edit", arguments: { path: names[1] } });
      assert.ok(r.isError && code(r) === "HASH_MISMATCH", JSON.stringify(r));
      assert.ok(text(r).includes(stale) && text(r).includes("nothing was undone"), text(r));
      assert.equal(r._meta["burrow/details"].file, 7, JSON.stringify(r._meta));
      for (const n of names) {
        assert.equal(fs.readFileSync(file(n), "utf8"), n === stale ? "someone else's\n" : `import new_name  # ${n}\n`,
          `nothing undone: ${n}`);
      }
      fs.writeFileSync(file(stale), `import new_name  # ${stale}\n`);
      const u2 = await direct[2].callTool({ name: "undo_edit", arguments: { path: names[9] } });
      assert.ok(!u2.isError, JSON.stringify(u2));
      assert.equal(u2.structuredContent.files, 10, JSON.stringify(u2));
      allAre("old", "stateless: all ten back by one undo");
    } finally {
      for (const close of closers) await Promise.resolve().then(close).catch(() => {});
      await c.stop();
    }
  });
