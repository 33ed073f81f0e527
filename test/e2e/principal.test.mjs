// End-to-end (issue 45): every request has one principal, its tenant and
// token, fixed at admission for both eras; budgets (quotas) key on it, so a
// stateless request and every session of one token share one budget
// (opening more sessions, or none, never buys more quota), and one token's
// spent budget does not stop another token of its tenant.
//
//   cd test/e2e && node --test principal.test.mjs

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { REPO, sseEvents, startHttp } from "./http_helpers.mjs";

const T = { timeout: 120_000 };
const V = "2026-07-28";
const META = {
  "io.modelcontextprotocol/protocolVersion": V,
  "io.modelcontextprotocol/clientInfo": { name: "principal-test", version: "1" },
  "io.modelcontextprotocol/clientCapabilities": {},
};
const sha = (t) => crypto.createHash("sha256").update(t).digest("hex");
const SHIM = path.resolve(REPO, process.env.BURROW_BUILD || "build", "faults.so");
const TOKA = "token-a-0123456789", TOKB = "token-b-0123456789";

let TMP;
let counter = 0;
const servers = [];
before(() => { TMP = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "burrow-principal-"))); });
after(async () => {
  for (const s of servers) await s.stop();
  if (TMP) fs.rmSync(TMP, { recursive: true, force: true });
});

// A folder with ws/ and burrow.yaml: two tokens of the default tenant,
// two workers (so a budget kept per worker would show), quotas as given.
async function serve(quotas, env = {}) {
  const dir = path.join(TMP, `p${++counter}`);
  fs.mkdirSync(path.join(dir, "ws"), { recursive: true });
  fs.writeFileSync(path.join(dir, "burrow.yaml"), `roots: [ws]\npolicies: [default, {name: quotas, ${quotas}}]\n`
    + `http:\n  workers: 2\n  tokens:\n    - {sha256: ${sha(TOKA)}}\n    - {sha256: ${sha(TOKB)}}\n`);
  const s = await startHttp(["--config", path.join(dir, "burrow.yaml")], { env });
  servers.push(s);
  return { ...s, dir };
}

let nextId = 1;
// One stateless tools/call with token tok: the MCP result or error.
async function call(url, tok, name, args) {
  const id = nextId++;
  const r = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream",
      "mcp-protocol-version": V, "mcp-method": "tools/call", "mcp-name": name, authorization: `Bearer ${tok}` },
    body: JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call", params: { name, arguments: args, _meta: META } }),
  });
  assert.equal(r.status, 200);
  if ((r.headers.get("content-type") || "").includes("text/event-stream")) {
    for await (const e of sseEvents(r.body, 60_000)) {
      const m = e.data && JSON.parse(e.data);
      if (m && m.id === id) return m;
    }
  }
  return JSON.parse(await r.text());
}

async function session(url, tok) {
  const c = new Client({ name: "principal-session", version: "1" });
  await c.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { authorization: `Bearer ${tok}` } } }));
  return c;
}

const written = (dir) => fs.readdirSync(path.join(dir, "ws")).length;
const denied = (res) => Boolean(res.isError && res._meta?.["burrow/code"] === "POLICY_DENIED");

test("six stateless 900-byte writes under a 1,000-byte quota: one lands, the rest are refused", T, async () => {
  const s = await serve("max_bytes_written: 1000");
  const results = [];
  for (let i = 0; i < 6; i++) results.push((await call(s.url, TOKA, "write_file", { path: `f${i}.txt`, content: "x".repeat(900) })).result);
  assert.equal(results.filter((r) => !r.isError).length, 1, JSON.stringify(results.map((r) => r.content?.[0]?.text)));
  assert.ok(results.slice(1).every(denied), "every later write is the quota's refusal");
  assert.equal(written(s.dir), 1);
});

test("sessions and stateless requests of one token share one budget; another token of the tenant has its own", T, async () => {
  const s = await serve("max_bytes_written: 1000");
  const [a1, a2] = [await session(s.url, TOKA), await session(s.url, TOKA)];
  try {
    const w = (c, p) => c.callTool({ name: "write_file", arguments: { path: p, content: "y".repeat(400) } });
    assert.ok(!(await w(a1, "s1.txt")).isError, "400 of 1,000");
    assert.ok(!(await w(a2, "s2.txt")).isError, "800 of 1,000: a second session spends the same budget");
    assert.ok(denied(await w(a2, "s3.txt")), "1,200 would pass 1,000: a session opened later does not start again");
    const st = (await call(s.url, TOKA, "write_file", { path: "s4.txt", content: "z".repeat(400) })).result;
    assert.ok(denied(st), "a stateless request of the same token: the same budget");
    const b = (await call(s.url, TOKB, "write_file", { path: "b1.txt", content: "z".repeat(900) })).result;
    assert.ok(!b.isError, "token B of the same tenant: a budget of its own " + JSON.stringify(b));
    assert.equal(written(s.dir), 3);
  } finally { await a1.close(); await a2.close(); }
});

test("calls per minute: stateless calls of one token are counted together, across workers", T, async () => {
  // the minute is the test's (the fault shim's clock: time() reads a file)
  const clock = path.join(TMP, `clock${++counter}`);
  fs.writeFileSync(clock, String(29_000_000 * 60 + 5));
  const s = await serve("max_calls_per_minute: 3", { LD_PRELOAD: SHIM, BURROW_FAULT_CLOCK: clock });
  const out = [];
  for (let i = 0; i < 6; i++) out.push((await call(s.url, TOKA, "stat", { path: "." })).result);
  assert.deepEqual(out.map((r) => denied(r)), [false, false, false, true, true, true]);
  const b = (await call(s.url, TOKB, "stat", { path: "." })).result;
  assert.ok(!b.isError, "another token is served");
});
