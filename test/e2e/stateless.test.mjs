// Issue 27: MCP 2026-07-28, the stateless revision, beside the session
// revisions on one server. A request names its revision and the client's
// capabilities in params._meta (and, over HTTP, its revision, method and
// name in headers that must agree with the body); it needs no initialize
// and no session, and any worker serves it. Raw fetch and raw stdio here:
// the 1.x SDK the other tests use speaks only the session revisions.
//
//   cd test/e2e && npm ci && node --test stateless.test.mjs

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { BIN, runToEnd, sseEvents, startHttp, waitFor } from "./http_helpers.mjs";

const T = { timeout: 90_000 };
const V = "2026-07-28";
const META = (extra = {}) => ({
  "io.modelcontextprotocol/protocolVersion": V,
  "io.modelcontextprotocol/clientInfo": { name: "stateless-test", version: "1" },
  "io.modelcontextprotocol/clientCapabilities": {},
  ...extra,
});
let TMP;
let counter = 0;
const servers = [];

before(() => { TMP = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "burrow-stateless-"))); });
after(async () => {
  for (const s of servers) await s.stop();
  if (TMP) fs.rmSync(TMP, { recursive: true, force: true });
});

function setup(files) {
  const dir = path.join(TMP, `s${++counter}`);
  fs.mkdirSync(dir, { recursive: true });
  for (const [rel, body] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
    fs.writeFileSync(path.join(dir, rel), body);
  }
  return dir;
}

async function serve(args) {
  const s = await startHttp(args);
  servers.push(s);
  return s;
}

let nextId = 1;
/** One stateless POST: the headers a 2026-07-28 client sends, unless
 * `headers` replaces them (a key set to undefined drops one). Resolves to
 * {status, headers, msg (the response), events}. */
async function post(url, method, params = {}, { headers = {}, meta = META(), id = nextId++, body, signal, accept } = {}) {
  const name = method === "tools/call" || method === "prompts/get" ? params.name
    : method === "resources/read" ? params.uri : undefined;
  const h = { "content-type": "application/json", accept: accept || "application/json, text/event-stream",
    "mcp-protocol-version": V, "mcp-method": method, ...(name !== undefined ? { "mcp-name": name } : {}) };
  for (const [k, v] of Object.entries(headers)) {
    if (v === undefined) delete h[k.toLowerCase()];
    else h[k.toLowerCase()] = v;
  }
  const text = body ?? JSON.stringify({ jsonrpc: "2.0", id, method, params: meta ? { ...params, _meta: { ...meta, ...(params._meta || {}) } } : params });
  const r = await fetch(url, { method: "POST", headers: h, body: text, signal });
  const ct = r.headers.get("content-type") || "";
  const events = [];
  let msg;
  if (ct.includes("text/event-stream")) {
    for await (const e of sseEvents(r.body, 60_000)) {
      if (!e.data) continue;
      const m = JSON.parse(e.data);
      events.push(m);
      if (m.id === id && (m.result || m.error)) { msg = m; break; }
    }
  } else {
    const t = await r.text();
    msg = t ? JSON.parse(t) : undefined;
  }
  return { status: r.status, headers: r.headers, msg, events };
}

const text = (res) => res.content.map((b) => b.text).join("");

test("server/discover and the lists answer without initialize or a session, with resultType, serverInfo and cache hints", T, async () => {
  const dir = setup({ "a.txt": "alpha\n" });
  const s = await serve(["--root", dir]);
  const d = await post(s.url, "server/discover");
  assert.equal(d.status, 200);
  assert.equal(d.headers.get("mcp-session-id"), null, "no session is made");
  const r = d.msg.result;
  assert.ok(r.supportedVersions.includes(V) && r.supportedVersions.includes("2025-11-25"), JSON.stringify(r.supportedVersions));
  assert.equal(r.resultType, "complete");
  assert.deepEqual(Object.keys(r.capabilities).sort(), ["completions", "experimental", "extensions", "logging", "prompts", "resources", "tools"]);
  assert.deepEqual(r.capabilities.extensions, { "io.modelcontextprotocol/tasks": {},
    "io.modelcontextprotocol/resource-operations": { directoryRead: false } },
  "the tasks extension (tasks.test.mjs) and the resource operations (resource_ops.test.mjs)");
  assert.deepEqual(r.capabilities.experimental, { "io.modelcontextprotocol/resource-operations": { directoryRead: false } });
  assert.equal(r.capabilities.resources.subscribe, true, "subscriptions/listen watches files");
  assert.equal(r.capabilities.tools.listChanged, undefined, "an HTTP server never reloads: its lists never change");
  assert.equal(r._meta["io.modelcontextprotocol/serverInfo"].name, "burrow");
  assert.ok(Number.isInteger(r.ttlMs) && r.ttlMs >= 0);

  const tl = (await post(s.url, "tools/list")).msg.result;
  assert.ok(tl.tools.some((t) => t.name === "read_file"));
  assert.equal(tl.resultType, "complete");
  assert.equal(tl.cacheScope, "private");
  assert.ok(Number.isInteger(tl.ttlMs));
  const pl = (await post(s.url, "prompts/list")).msg.result;
  assert.deepEqual(pl.prompts, []);
  const uri = `file://${dir}/a.txt`;
  const rr = (await post(s.url, "resources/read", { uri })).msg.result;
  assert.equal(rr.contents[0].text, "alpha\n");
  assert.equal(rr.cacheScope, "private");
  assert.equal(rr.ttlMs, 0, "file contents change at any time");
  const nf = (await post(s.url, "resources/read", { uri: `file://${dir}/none.txt` })).msg;
  assert.equal(nf.error.code, -32602, "a missing resource is -32602 in 2026-07-28");
  assert.equal(nf.error.data.uri, `file://${dir}/none.txt`);
});

test("tools run statelessly: read, edit, each request on its own; a session client beside them is unchanged", T, async () => {
  const dir = setup({ "a.txt": "one\ntwo\n" });
  const s = await serve(["--root", dir]);
  const legacy = new Client({ name: "legacy", version: "1" }, { capabilities: {} });
  await legacy.connect(new StreamableHTTPClientTransport(new URL(s.url)));
  const read = (await post(s.url, "tools/call", { name: "read_file", arguments: { path: "a.txt" } })).msg.result;
  assert.equal(read.isError, undefined, text(read));
  assert.match(text(read), /two/);
  const ed = (await post(s.url, "tools/call", { name: "edit_file", arguments: { path: "a.txt", old_text: "two", new_text: "TWO" } })).msg.result;
  assert.equal(ed.isError, undefined, text(ed));
  assert.equal(fs.readFileSync(path.join(dir, "a.txt"), "utf8"), "one\nTWO\n");
  const lr = await legacy.callTool({ name: "read_file", arguments: { path: "a.txt" } });
  assert.match(text(lr), /TWO/);
  assert.equal(legacy.getServerVersion().name, "burrow");
  await legacy.close();
});

const ASK = `return { name = "hold", check = function(r)
  if r.operation == "write" and r.path:match("^held/") then return "ask", "held by the test" end
  return "allow" end }\n`;
const ELICIT = { "io.modelcontextprotocol/clientCapabilities": { elicitation: { form: {} } } };
const YES = { approve: { action: "accept", content: { approve: true } } };

test("a policy's ask fails closed for a stateless client that cannot answer a form: 400 -32021 naming the capability, nothing written", T, async () => {
  const dir = setup({ "ws/held/keep.txt": "k\n", "ask.lua": ASK });
  fs.writeFileSync(path.join(dir, "burrow.yaml"), "roots: [ws]\npolicies: [./ask.lua]\n");
  const s = await serve(["--config", path.join(dir, "burrow.yaml")]);
  for (const accept of ["application/json, text/event-stream", "application/json"]) {
    const r = await post(s.url, "tools/call", { name: "write_file", arguments: { path: "held/new.txt", content: "x\n" } }, { id: 41, accept });
    assert.equal(r.status, 400, JSON.stringify(r.msg));
    assert.equal(r.msg.id, 41);
    assert.equal(r.msg.error.code, -32021);
    assert.deepEqual(r.msg.error.data.requiredCapabilities, { elicitation: {} });
    assert.match(r.msg.error.message, /held\/new\.txt needs approval/);
  }
  assert.equal(fs.existsSync(path.join(dir, "ws", "held", "new.txt")), false);
  // a write no policy asks about is answered as before (200)
  const ok = await post(s.url, "tools/call", { name: "write_file", arguments: { path: "free.txt", content: "x\n" } });
  assert.equal(ok.status, 200);
  assert.equal(ok.msg.result.isError, undefined);
});

test("one worker's stateless requests in turn: each takes nothing from the one before; a JSON answer comes whole, with its length", T, async () => {
  // one worker: every request below meets the Server it keeps for this
  // principal (http.lua handle_stateless), right after the one before
  const dir = setup({ "ws/held/a.txt": "a0\n", "ws/b.txt": "bee\n", "ask.lua": ASK });
  fs.writeFileSync(path.join(dir, "burrow.yaml"), "roots: [ws]\npolicies: [./ask.lua]\nhttp: {workers: 1}\n");
  const s = await serve(["--config", path.join(dir, "burrow.yaml")]);
  const write = { name: "write_file", arguments: { path: "held/a.txt", content: "a1\n" } };
  for (let round = 0; round < 3; round++) {
    const asked = await post(s.url, "tools/call", { ...write, _meta: ELICIT });
    assert.equal(asked.msg.result?.resultType, "input_required", JSON.stringify(asked.msg));
    // the same call from a client that declared no elicitation: the one
    // before's capabilities are not this request's
    const bare = await post(s.url, "tools/call", write);
    assert.equal(bare.status, 400, JSON.stringify(bare.msg));
    assert.equal(bare.msg.error.code, -32021);
  }
  assert.equal(fs.readFileSync(path.join(dir, "ws", "held", "a.txt"), "utf8"), "a0\n");
  // a plain JSON answer: one body with its Content-Length, not chunks
  const r = await fetch(s.url, { method: "POST", headers: { "content-type": "application/json", accept: "application/json",
    "mcp-protocol-version": V, "mcp-method": "tools/call", "mcp-name": "read_file" },
  body: JSON.stringify({ jsonrpc: "2.0", id: 7, method: "tools/call", params: { name: "read_file", arguments: { path: "b.txt" }, _meta: META() } }) });
  const body = await r.text();
  assert.equal(r.status, 200);
  assert.equal(r.headers.get("content-type"), "application/json");
  assert.equal(r.headers.get("transfer-encoding"), null, "not chunked");
  assert.equal(Number(r.headers.get("content-length")), Buffer.byteLength(body));
  const m = JSON.parse(body);
  assert.equal(m.id, 7);
  assert.match(text(m.result), /bee/);
});

// Two instances with one deployment key and one store of used states, as
// behind a proxy without stickiness (docs/protocol.md "Approvals").
async function pair(dir, extra = "") {
  fs.writeFileSync(path.join(dir, "key"), "k".repeat(16) + "0123456789abcdef0123\n");
  fs.writeFileSync(path.join(dir, "burrow.yaml"), "roots: [ws]\npolicies: [./ask.lua]\n"
    + `http: {approval_key_file: key, approval_store: used.db${extra}}\n`);
  return [await serve(["--config", path.join(dir, "burrow.yaml")]), await serve(["--config", path.join(dir, "burrow.yaml")])];
}

test("approvals as multi round-trip requests: asked on one instance, answered on the other; replays, tampering, other arguments and a changed file are refused", T, async () => {
  const dir = setup({ "ws/held/a.txt": "a0\n", "ask.lua": ASK });
  const [A, B] = await pair(dir);
  const file = path.join(dir, "ws", "held", "a.txt");
  const write = (content) => ({ name: "write_file", arguments: { path: "held/a.txt", content }, _meta: ELICIT });
  // round 1 on A: the question, nothing written
  const q = (await post(A.url, "tools/call", write("a1\n"))).msg.result;
  assert.equal(q.resultType, "input_required", JSON.stringify(q));
  assert.equal(q.inputRequests.approve.method, "elicitation/create");
  assert.match(q.inputRequests.approve.params.message, /held\/a\.txt/);
  assert.equal(typeof q.requestState, "string");
  assert.equal(fs.readFileSync(file, "utf8"), "a0\n");
  const refused = async (srv, params, why) => {
    const r = await post(srv.url, "tools/call", params);
    assert.equal(r.msg.error?.code, -32602, `${why}: ${JSON.stringify(r.msg)}`);
    return r.msg.error.message;
  };
  // tampered: one character of the signed payload changed
  const st = q.requestState;
  const i = st.indexOf(".") - 3;
  const tampered = st.slice(0, i) + (st[i] === "A" ? "B" : "A") + st.slice(i + 1);
  assert.match(await refused(B, { ...write("a1\n"), inputResponses: YES, requestState: tampered }, "tampered"), /integrity/);
  // the state of one call for other arguments
  assert.match(await refused(B, { ...write("evil\n"), inputResponses: YES, requestState: st }, "other arguments"), /another call/);
  assert.match(await refused(B, { ...write("a1\n"), inputResponses: YES }, "no state"), /requestState/);
  assert.equal(fs.readFileSync(file, "utf8"), "a0\n", "no refused retry wrote");
  // round 2 on B (the other instance): approved, written
  const ok = (await post(B.url, "tools/call", { ...write("a1\n"), inputResponses: YES, requestState: st })).msg.result;
  assert.equal(ok.isError, undefined, JSON.stringify(ok));
  assert.equal(ok.resultType, "complete");
  assert.equal(fs.readFileSync(file, "utf8"), "a1\n");
  // the same state again, to either instance: used
  fs.writeFileSync(file, "a0\n");
  for (const srv of [A, B]) assert.match(await refused(srv, { ...write("a1\n"), inputResponses: YES, requestState: st }, "replay"), /used already/);
  assert.equal(fs.readFileSync(file, "utf8"), "a0\n");
  // the file changes between the question and the answer
  const q2 = (await post(A.url, "tools/call", write("a2\n"))).msg.result;
  fs.writeFileSync(file, "changed meanwhile\n");
  assert.match(await refused(B, { ...write("a2\n"), inputResponses: YES, requestState: q2.requestState }, "changed file"), /changed since/);
  assert.equal(fs.readFileSync(file, "utf8"), "changed meanwhile\n");
  // the same for a binary file (read_file hashes it only as base64)
  const bin = path.join(dir, "ws", "held", "b.bin");
  fs.writeFileSync(bin, crypto.randomBytes(3000));
  const wb = { name: "write_file", arguments: { path: "held/b.bin", content: "text now\n" }, _meta: ELICIT };
  const qb = (await post(A.url, "tools/call", wb)).msg.result;
  fs.appendFileSync(bin, Buffer.from([0, 1, 2]));
  assert.match(await refused(B, { ...wb, inputResponses: YES, requestState: qb.requestState }, "changed binary"), /changed since/);
  assert.equal(fs.statSync(bin).size, 3003);
  // the user says no
  const q3 = (await post(B.url, "tools/call", write("a3\n"))).msg.result;
  const no = (await post(A.url, "tools/call", { ...write("a3\n"), inputResponses: { approve: { action: "decline" } }, requestState: q3.requestState })).msg.result;
  assert.equal(no._meta["burrow/code"], "POLICY_DENIED");
  assert.match(text(no), /decline/);
  assert.equal(fs.readFileSync(file, "utf8"), "changed meanwhile\n");
});

test("a deployment key shorter than 32 bytes, or a store that cannot be opened, stops the start with what to do", T, async () => {
  const dir = setup({ "ws/a.txt": "a\n" });
  fs.writeFileSync(path.join(dir, "short.key"), "too short\n");
  fs.writeFileSync(path.join(dir, "burrow.yaml"), "roots: [ws]\nhttp: {listen: 127.0.0.1:0, approval_key_file: short.key}\n");
  let r = await runToEnd(["mcp", "--config", path.join(dir, "burrow.yaml"), "--http", "127.0.0.1:0"]);
  assert.notEqual(r.code, 0);
  assert.match(r.stderr, /approval_key_file: .*short\.key holds 9 bytes; give at least 32/);
  fs.writeFileSync(path.join(dir, "burrow.yaml"), "roots: [ws]\nhttp: {listen: 127.0.0.1:0, approval_store: no/such/dir/used.db}\n");
  r = await runToEnd(["mcp", "--config", path.join(dir, "burrow.yaml"), "--http", "127.0.0.1:0"]);
  assert.notEqual(r.code, 0);
  assert.match(r.stderr, /approval_store: .*no\/such\/dir\/used\.db/);
});

test("without http.approval_store a used approval state is refused by every worker of the process, not only the one that took it", T, async () => {
  const dir = setup({ "ws/held/a.txt": "a0\n", "ws/slow.txt": SLOW, "ask.lua": ASK });
  fs.writeFileSync(path.join(dir, "burrow.yaml"), "roots: [ws]\npolicies: [./ask.lua]\nhttp: {workers: 2}\n");
  const s = await serve(["--config", path.join(dir, "burrow.yaml")]);
  const write = { name: "write_file", arguments: { path: "held/a.txt", content: "a1\n" }, _meta: ELICIT };
  const q = (await post(s.url, "tools/call", write)).msg.result;
  const retry = () => post(s.url, "tools/call", { ...write, inputResponses: YES, requestState: q.requestState });
  assert.equal((await retry()).msg.result?.isError, undefined, "the first use writes");
  // a state each: one worker busy with a grep, the replay goes to the
  // other; then that one busy and the first freed: the replay goes there
  const stop1 = await longGrep(s.url);
  let r = await retry();
  assert.match(r.msg.error?.message || JSON.stringify(r.msg), /used already/);
  const stop2 = await longGrep(s.url);
  stop1();
  r = await retry();
  assert.match(r.msg.error?.message || JSON.stringify(r.msg), /used already/);
  stop2();
});

test("an approval state expires (http.approval_ttl): a late answer writes nothing", T, async () => {
  const dir = setup({ "ws/held/a.txt": "a0\n", "ask.lua": ASK });
  const [A] = await pair(dir, ", approval_ttl: 1s");
  const write = { name: "write_file", arguments: { path: "held/a.txt", content: "late\n" }, _meta: ELICIT };
  const q = (await post(A.url, "tools/call", write)).msg.result;
  // a state: the clock is past the expiry the state names (its payload is
  // readable; only its signature is the server's)
  const x = JSON.parse(Buffer.from(q.requestState.split(".")[0], "base64").toString()).x;
  await waitFor(() => Date.now() / 1000 > x + 1, "the clock past the state's expiry", 30_000, 100);
  const r = await post(A.url, "tools/call", { ...write, inputResponses: YES, requestState: q.requestState });
  assert.equal(r.msg.error?.code, -32602, JSON.stringify(r.msg));
  assert.match(r.msg.error.message, /expired/);
  assert.equal(fs.readFileSync(path.join(dir, "ws", "held", "a.txt"), "utf8"), "a0\n");
});

test("a state issued to one tenant is refused to another", T, async () => {
  const dir = setup({ "ws/held/a.txt": "a0\n", "other/held/a.txt": "b0\n", "ask.lua": ASK });
  fs.writeFileSync(path.join(dir, "b.yaml"), "roots: [other]\npolicies: [./ask.lua]\n");
  const sha = (t) => crypto.createHash("sha256").update(t).digest("hex");
  fs.writeFileSync(path.join(dir, "burrow.yaml"), "roots: [ws]\npolicies: [./ask.lua]\nhttp:\n  tenants:\n    b: {config: b.yaml}\n"
    + `  tokens:\n    - {sha256: ${sha("token-a-0123456789")}}\n    - {sha256: ${sha("token-b-0123456789")}, tenant: b}\n`);
  const s = await serve(["--config", path.join(dir, "burrow.yaml")]);
  const write = { name: "write_file", arguments: { path: "held/a.txt", content: "x\n" }, _meta: ELICIT };
  const q = (await post(s.url, "tools/call", write, { headers: { authorization: "Bearer token-a-0123456789" } })).msg.result;
  assert.equal(q.resultType, "input_required");
  const r = await post(s.url, "tools/call", { ...write, inputResponses: YES, requestState: q.requestState },
    { headers: { authorization: "Bearer token-b-0123456789" } });
  assert.equal(r.msg.error?.code, -32602, JSON.stringify(r.msg));
  assert.match(r.msg.error.message, /another tenant/);
  assert.equal(fs.readFileSync(path.join(dir, "other", "held", "a.txt"), "utf8"), "b0\n");
  assert.equal(fs.readFileSync(path.join(dir, "ws", "held", "a.txt"), "utf8"), "a0\n");
});

test("a state issued to one token is refused to another token of the same tenant (issue 45)", T, async () => {
  const dir = setup({ "ws/held/a.txt": "a0\n", "ask.lua": ASK });
  const sha = (t) => crypto.createHash("sha256").update(t).digest("hex");
  fs.writeFileSync(path.join(dir, "burrow.yaml"), "roots: [ws]\npolicies: [./ask.lua]\nhttp:\n"
    + `  tokens:\n    - {sha256: ${sha("token-a-0123456789")}}\n    - {sha256: ${sha("token-d-0123456789")}}\n`);
  const s = await serve(["--config", path.join(dir, "burrow.yaml")]);
  const write = { name: "write_file", arguments: { path: "held/a.txt", content: "x\n" }, _meta: ELICIT };
  const A = { headers: { authorization: "Bearer token-a-0123456789" } };
  const D = { headers: { authorization: "Bearer token-d-0123456789" } };
  const q = (await post(s.url, "tools/call", write, A)).msg.result;
  assert.equal(q.resultType, "input_required");
  const r = await post(s.url, "tools/call", { ...write, inputResponses: YES, requestState: q.requestState }, D);
  assert.equal(r.msg.error?.code, -32602, JSON.stringify(r.msg));
  assert.match(r.msg.error.message, /another token/);
  assert.equal(fs.readFileSync(path.join(dir, "ws", "held", "a.txt"), "utf8"), "a0\n");
  // the token it was issued to still redeems it (the refusal did not use it up)
  const ok = await post(s.url, "tools/call", { ...write, inputResponses: YES, requestState: q.requestState }, A);
  assert.equal(ok.msg.result?.isError, undefined, JSON.stringify(ok.msg));
  assert.equal(fs.readFileSync(path.join(dir, "ws", "held", "a.txt"), "utf8"), "x\n");
});

test("undo_edit takes back a change an earlier stateless request made, for the same client (tenant and token) only", T, async () => {
  const dir = setup({ "ws/a.txt": "v1\n" });
  const sha = (t) => crypto.createHash("sha256").update(t).digest("hex");
  fs.writeFileSync(path.join(dir, "burrow.yaml"), "roots: [ws]\nhttp:\n  workers: 2\n"
    + `  tokens:\n    - {sha256: ${sha("token-a-0123456789")}}\n    - {sha256: ${sha("token-c-0123456789")}}\n`);
  const s = await serve(["--config", path.join(dir, "burrow.yaml")]);
  const as = (t) => ({ headers: { authorization: `Bearer ${t}` } });
  const A = as("token-a-0123456789"), C = as("token-c-0123456789");
  const file = () => fs.readFileSync(path.join(dir, "ws", "a.txt"), "utf8");
  let r = await post(s.url, "tools/call", { name: "write_file", arguments: { path: "a.txt", content: "v2\n" } }, A);
  assert.equal(r.msg.result?.isError, undefined, JSON.stringify(r.msg));
  r = await post(s.url, "tools/call", { name: "edit_file", arguments: { path: "a.txt", old_text: "v2", new_text: "v3" } }, A);
  assert.equal(file(), "v3\n");
  // another token's client: its own store, nothing of A's to take back
  r = await post(s.url, "tools/call", { name: "undo_edit", arguments: { path: "a.txt" } }, C);
  assert.equal(r.msg.result?.isError, true, JSON.stringify(r.msg));
  assert.equal(file(), "v3\n");
  // A's, on whichever worker: newest first
  r = await post(s.url, "tools/call", { name: "undo_edit", arguments: { path: "a.txt" } }, A);
  assert.notEqual(r.msg.result?.isError, true, JSON.stringify(r.msg));
  assert.equal(file(), "v2\n");
  r = await post(s.url, "tools/call", { name: "undo_edit", arguments: { path: "a.txt" } }, A);
  assert.notEqual(r.msg.result?.isError, true, JSON.stringify(r.msg));
  assert.equal(file(), "v1\n");
});

test("headers and body must agree: every mismatch is 400 -32020 with the request's id, and nothing runs", T, async () => {
  const dir = setup({ "a.txt": "keep\n" });
  const s = await serve(["--root", dir]);
  const write = { name: "write_file", arguments: { path: "a.txt", content: "overwritten\n" } };
  const cases = [
    ["Mcp-Method missing", "tools/call", write, { "mcp-method": undefined }],
    ["Mcp-Method of another method", "tools/call", write, { "mcp-method": "tools/list" }],
    ["Mcp-Method in another case", "tools/list", {}, { "mcp-method": "TOOLS/LIST" }],
    // a proxy that lets read_file through by Mcp-Name must not carry a write
    ["Mcp-Name of another tool", "tools/call", write, { "mcp-name": "read_file" }],
    ["Mcp-Name missing", "tools/call", write, { "mcp-name": undefined }],
    ["Mcp-Name in bad Base64", "tools/call", write, { "mcp-name": "=?base64?d3JpdGVfZmlsZQ?=" }],
    ["Mcp-Name in Base64 of another tool", "tools/call", write, { "mcp-name": `=?base64?${Buffer.from("read_file").toString("base64")}?=` }],
    ["MCP-Protocol-Version missing", "tools/call", write, { "mcp-protocol-version": undefined }],
  ];
  for (const [what, method, params, headers] of cases) {
    const id = `case-${what}`;
    const r = await post(s.url, method, params, { headers, id });
    assert.equal(r.status, 400, `${what}: ${JSON.stringify(r.msg)}`);
    assert.equal(r.msg.error.code, -32020, `${what}: ${JSON.stringify(r.msg)}`);
    assert.equal(r.msg.id, id, `${what}: the error names the request`);
  }
  // the body's revision against the header's
  const mm = await post(s.url, "tools/list", {}, { headers: { "mcp-protocol-version": "2025-11-25" } });
  assert.equal(mm.status, 400);
  assert.equal(mm.msg.error.code, -32020);
  assert.equal(fs.readFileSync(path.join(dir, "a.txt"), "utf8"), "keep\n", "no refused request wrote");
  // the Base64 form of the right name, and spaces around values, pass
  const ok = await post(s.url, "tools/call", write, { headers: { "mcp-name": `  =?base64?${Buffer.from("write_file").toString("base64")}?=  `, "mcp-method": " tools/call " } });
  assert.equal(ok.status, 200, JSON.stringify(ok.msg));
  assert.equal(fs.readFileSync(path.join(dir, "a.txt"), "utf8"), "overwritten\n");
});

test("unsupported revisions, missing _meta, removed methods and batches are refused with the request's id", T, async () => {
  const dir = setup({});
  const s = await serve(["--root", dir]);
  const un = await post(s.url, "tools/list", {}, { headers: { "mcp-protocol-version": "2099-01-01" },
    meta: META({ "io.modelcontextprotocol/protocolVersion": "2099-01-01" }), id: 7 });
  assert.equal(un.status, 400);
  assert.equal(un.msg.id, 7);
  assert.equal(un.msg.error.code, -32022);
  assert.equal(un.msg.error.data.requested, "2099-01-01");
  assert.ok(un.msg.error.data.supported.includes(V));
  const nocaps = await post(s.url, "tools/list", {}, { meta: { "io.modelcontextprotocol/protocolVersion": V }, id: 8 });
  assert.equal(nocaps.status, 400);
  assert.equal(nocaps.msg.error.code, -32602);
  assert.equal(nocaps.msg.id, 8);
  const nometa = await post(s.url, "tools/list", {}, { meta: null, id: 9 });
  assert.equal(nometa.status, 400);
  assert.equal(nometa.msg.error.code, -32602);
  for (const m of ["initialize", "ping", "logging/setLevel", "resources/subscribe", "no/such"]) {
    const r = await post(s.url, m, {}, { id: `m-${m}` });
    assert.equal(r.status, 404, `${m}: ${JSON.stringify(r.msg)}`);
    assert.equal(r.msg.error.code, -32601);
    assert.equal(r.msg.id, `m-${m}`);
  }
  const batch = JSON.stringify([{ jsonrpc: "2.0", id: 1, method: "tools/list", params: { _meta: META() } }]);
  const b = await post(s.url, "tools/list", {}, { body: batch });
  assert.equal(b.status, 400);
  assert.equal(b.msg.error.code, -32600);
});

// One 1.1 MB file on which (a+)+$ backtracks for minutes.
const BACKTRACK = "(a+)+$";
const SLOW = ("a".repeat(20) + "b\n").repeat(50000);
function slowTree() {
  return setup({ "slow.txt": SLOW });
}

/** A stateless grep for BACKTRACK, which runs for minutes, started: resolves
 * once it runs (its first progress report; with progress false, once its
 * stream is open) to a function that closes its stream. */
async function longGrep(url, { progress = true, headers = {} } = {}) {
  const ac = new AbortController();
  const h = { "content-type": "application/json", accept: "text/event-stream", "mcp-protocol-version": V,
    "mcp-method": "tools/call", "mcp-name": "grep", ...headers };
  const r = await fetch(url, { method: "POST", headers: h, signal: ac.signal, body: JSON.stringify({ jsonrpc: "2.0", id: 1,
    method: "tools/call", params: { name: "grep", arguments: { pattern: BACKTRACK }, _meta: META(progress ? { progressToken: "p" } : {}) } }) });
  for await (const e of sseEvents(r.body, 60_000)) {
    if (!progress || (e.data && JSON.parse(e.data).method === "notifications/progress")) break;
  }
  return () => ac.abort();
}

test("closing a request's stream cancels its call: the one worker is free again for the next request", T, async () => {
  const dir = slowTree();
  fs.writeFileSync(path.join(dir, "burrow.yaml"), "roots: [.]\nhttp: {workers: 1}\n");
  const s = await serve(["--config", path.join(dir, "burrow.yaml")]);
  const stop = await longGrep(s.url); // a state: the grep runs (its first progress report came)
  stop();
  // the only worker serves this one only once the grep has stopped
  const t0 = performance.now();
  const next = await post(s.url, "tools/list", {});
  assert.equal(next.status, 200);
  assert.ok(next.msg.result.tools.length > 0);
  console.log(`next request after closing a long grep's stream: ${(performance.now() - t0).toFixed(0)} ms (the grep runs for minutes)`);
});

test("a closed stream cancels a call that sends nothing (no progressToken): the keep-alive finds the client gone", T, async () => {
  const dir = slowTree();
  fs.writeFileSync(path.join(dir, "burrow.yaml"), "roots: [.]\nhttp: {workers: 1}\n");
  const s = await serve(["--config", path.join(dir, "burrow.yaml")]);
  const stop = await longGrep(s.url, { progress: false }); // the stream is open (its priming event)
  stop();
  // the grep stopped, or never began: either way the one worker is free
  const next = await post(s.url, "tools/list", {});
  assert.equal(next.status, 200);
});

// Its bound is the test's own timeout: cancelled, the next request comes
// within seconds; uncancelled (before the socket was watched), the grep
// kept the one worker past a minute.
test("a call answered as plain JSON is cancelled too when its client hangs up (the socket, not a write, shows it)", { timeout: 40_000 }, async () => {
  const dir = setup({ "slow1.txt": SLOW, "slow2.txt": SLOW, "slow3.txt": SLOW });
  fs.writeFileSync(path.join(dir, "burrow.yaml"), "roots: [.]\ncaps: {max_search_ms: 0}\nhttp: {workers: 1}\n");
  const s = await serve(["--config", path.join(dir, "burrow.yaml")]);
  const ac = new AbortController();
  const h = { "content-type": "application/json", accept: "application/json", "mcp-protocol-version": V,
    "mcp-method": "tools/call", "mcp-name": "grep" };
  const r = await fetch(s.url, { method: "POST", headers: h, signal: ac.signal, body: JSON.stringify({ jsonrpc: "2.0", id: 1,
    method: "tools/call", params: { name: "grep", arguments: { pattern: BACKTRACK }, _meta: META() } }) });
  assert.equal(r.headers.get("content-type"), "application/json"); // a state: the answer is under way
  ac.abort();
  // the grep stopped, or never began: the one worker serves the next request
  const next = await post(s.url, "tools/list", {});
  assert.equal(next.status, 200);
});

/** The listener's own gauges (http.metrics), by name (the default tenant's
 * where a gauge is per tenant). */
async function gauges(metricsUrl) {
  const text = await (await fetch(metricsUrl)).text();
  const out = {};
  for (const m of text.matchAll(/^(burrow_http_[a-z_]+)(?:\{[^}]*\})? (\S+)$/gm)) out[m[1]] = (out[m[1]] || 0) + Number(m[2]);
  return out;
}

// The worker answers a stateless POST's connection itself being resumed
// once it has let go of the listener's lock (httppark.c, deferred wakes):
// here every such connection's client is gone by then. Each must still be
// resumed (else it stays suspended for ever: its socket, its session and
// its place in the connection count), every call given back, the next
// request served, and the stop at SIGTERM clean.
test("answers a worker writes to clients that left while they waited: every connection resumed and closed, the calls given back, the stop clean", T, async () => {
  const N = 30;
  const dir = setup({ "slow.txt": SLOW, "small.txt": "line\n".repeat(400) });
  fs.writeFileSync(path.join(dir, "burrow.yaml"),
    "roots: [.]\nhttp: {workers: 1, max_calls: 64, metrics: {listen: \"127.0.0.1:0\"}}\n");
  const s = await serve(["--config", path.join(dir, "burrow.yaml")]);
  const metrics = s.stderr().match(/metrics at (http:\/\/\S+\/metrics)/)?.[1];
  assert.ok(metrics, s.stderr());
  const stopGrep = await longGrep(s.url); // the one worker is busy: what comes next waits, parked
  const body = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call",
    params: { name: "read_file", arguments: { path: "small.txt" }, _meta: META() } });
  const head = [`POST /mcp HTTP/1.1`, `Host: 127.0.0.1:${s.port}`, "Content-Type: application/json",
    "Accept: application/json", `MCP-Protocol-Version: ${V}`, "Mcp-Method: tools/call", "Mcp-Name: read_file",
    `Content-Length: ${Buffer.byteLength(body)}`, "", ""].join("\r\n");
  const socks = [];
  for (let i = 0; i < N; i++) {
    const c = net.connect(s.port, "127.0.0.1");
    c.on("error", () => {});
    c.on("data", () => assert.fail("no answer can come before the worker is free"));
    await new Promise((r) => c.once("connect", r));
    c.write(head + body);
    socks.push(c);
  }
  // a state: all N queued behind the grep (each POST parked on its stream)
  await waitFor(async () => (await gauges(metrics)).burrow_http_queued_requests === N, `${N} requests queued`);
  for (const c of socks) c.destroy(); // the clients go while their POSTs wait
  stopGrep(); // the worker is free: it answers the N, whose clients are gone
  await waitFor(async () => {
    const g = await gauges(metrics);
    return g.burrow_http_requests_in_flight === 0 && g.burrow_http_queued_requests === 0 && g.burrow_http_connections <= 2;
  }, "every call answered and every connection of a gone client closed");
  const next = await post(s.url, "tools/call", { name: "read_file", arguments: { path: "small.txt" } });
  assert.equal(next.status, 200);
  assert.match(text(next.msg.result), /line/);
  // many calls answered while SIGTERM comes: each resume the stop must not outrun
  const load = Array.from({ length: 20 }, async () => {
    for (;;) {
      try {
        await post(s.url, "tools/call", { name: "read_file", arguments: { path: "small.txt" } });
      } catch {
        return;
      }
    }
  });
  await waitFor(async () => (await gauges(metrics)).burrow_http_requests_in_flight > 0, "calls in flight");
  const code = await s.stop();
  assert.equal(code, 0, s.stderr());
  assert.match(s.stderr(), /SIGTERM: stopped \d+ ms after it/);
  await Promise.all(load);
});

test("stateless calls count against max_calls (they are not a way around it) and against no session limit", T, async () => {
  const dir = slowTree();
  fs.writeFileSync(path.join(dir, "burrow.yaml"), "roots: [.]\nhttp: {workers: 2, max_calls: 1, max_sessions: 1}\n");
  const s = await serve(["--config", path.join(dir, "burrow.yaml")]);
  const legacy = new Client({ name: "legacy", version: "1" }, { capabilities: {} });
  await legacy.connect(new StreamableHTTPClientTransport(new URL(s.url))); // the one session
  const d = await post(s.url, "server/discover");
  assert.equal(d.status, 200, "a stateless request is no session");
  const stop = await longGrep(s.url);
  const second = await post(s.url, "tools/list", {});
  assert.equal(second.status, 429, "the running grep holds the one call max_calls allows");
  stop();
  await legacy.close();
});

test("stdio serves both eras in one process: a stateless request beside an initialized session", T, async () => {
  const dir = setup({ "a.txt": "alpha\n" });
  const p = spawn(BIN, ["mcp", "--root", dir], { stdio: ["pipe", "pipe", "ignore"] });
  let buf = "";
  const waiting = new Map();
  p.stdout.on("data", (d) => {
    buf += d;
    let i;
    while ((i = buf.indexOf("\n")) >= 0) {
      const m = JSON.parse(buf.slice(0, i));
      buf = buf.slice(i + 1);
      if (m.id !== undefined && waiting.has(m.id)) waiting.get(m.id)(m);
    }
  });
  const ask = (id, method, params) => new Promise((r) => {
    waiting.set(id, r);
    p.stdin.write(JSON.stringify({ jsonrpc: "2.0", id, method, params }) + "\n");
  });
  const d = await ask(1, "server/discover", { _meta: META() });
  assert.ok(d.result.supportedVersions.includes(V));
  assert.equal(d.result.resultType, "complete");
  const ping = await ask(2, "ping", { _meta: META() });
  assert.equal(ping.error.code, -32601, "2026-07-28 has no ping");
  const un = await ask(3, "tools/list", { _meta: META({ "io.modelcontextprotocol/protocolVersion": "2099-01-01" }) });
  assert.equal(un.error.code, -32022);
  const init = await ask(4, "initialize", { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "x", version: "1" } });
  assert.equal(init.result.protocolVersion, "2025-11-25");
  const legacyPing = await ask(5, "ping", {});
  assert.deepEqual(legacyPing.result, {}, "the session's revision keeps ping");
  const read = await ask(6, "tools/call", { name: "read_file", arguments: { path: "a.txt" }, _meta: META() });
  assert.match(read.result.content[0].text, /alpha/);
  assert.equal(read.result.resultType, "complete");
  const legacyList = await ask(7, "tools/list", {});
  assert.equal(legacyList.result.resultType, undefined, "session-revision results stay as they were");
  p.stdin.end();
  await new Promise((r) => p.on("exit", r));
});

// A tool's own questions (ctx:ask): over MCP 2026-07-28 each question is an
// input_required round whose signed requestState carries the answers so
// far; in a session the same tool sends the client a request and waits.
const ASK_TOOL = path.resolve(path.dirname(new URL(import.meta.url).pathname), "fixtures", "ask_twice.lua");

test("ctx:ask over 2026-07-28: one round per question, earlier answers kept in the signed state; a forged state or an undeclared capability asks nothing", T, async () => {
  const dir = setup({ "ws/a.txt": "a\n" });
  fs.writeFileSync(path.join(dir, "burrow.yaml"), `roots: [ws]\ntools: [read_file, ${ASK_TOOL}]\n`);
  const s = await serve(["--config", path.join(dir, "burrow.yaml")]);
  const call = (extra = {}) => post(s.url, "tools/call", { name: "ask_twice", arguments: { topic: "t" }, _meta: ELICIT, ...extra });
  const r1 = (await call()).msg.result;
  assert.equal(r1.resultType, "input_required");
  assert.deepEqual(Object.keys(r1.inputRequests), ["name"]);
  assert.match(r1.inputRequests.name.params.message, /Your name\? \(t\)/);
  const accept = (content) => ({ action: "accept", content });
  const r2 = (await call({ inputResponses: { name: accept({ name: "Ada" }) }, requestState: r1.requestState })).msg.result;
  assert.equal(r2.resultType, "input_required");
  assert.deepEqual(Object.keys(r2.inputRequests), ["colour"]);
  assert.notEqual(r2.requestState, r1.requestState);
  const r3 = (await call({ inputResponses: { colour: accept({ colour: "green" }) }, requestState: r2.requestState })).msg.result;
  assert.equal(r3.resultType, "complete");
  assert.equal(text(r3), "Ada likes green", "the first round's answer came back in the state");
  // the earlier answer cannot be changed by the client: the state is signed
  const [payload, mac] = r2.requestState.split(".");
  const forged = JSON.parse(Buffer.from(payload, "base64").toString());
  forged.q.name.content.name = "Mallory";
  const bad = await call({ inputResponses: { colour: accept({ colour: "red" }) },
    requestState: Buffer.from(JSON.stringify(forged)).toString("base64") + "." + mac });
  assert.equal(bad.msg.error?.code, -32602, JSON.stringify(bad.msg));
  assert.match(bad.msg.error.message, /integrity/);
  // other arguments with a good state: refused
  const other = await post(s.url, "tools/call", { name: "ask_twice", arguments: { topic: "u" }, _meta: ELICIT,
    inputResponses: { colour: accept({ colour: "red" }) }, requestState: r2.requestState });
  assert.equal(other.msg.error?.code, -32602);
  // a client without elicitation: nothing is asked; the tool's failure is 400 -32021 naming the capability
  const none = await post(s.url, "tools/call", { name: "ask_twice", arguments: { topic: "t" } }, { id: 77 });
  assert.equal(none.status, 400, JSON.stringify(none.msg));
  assert.equal(none.msg.id, 77);
  assert.equal(none.msg.error.code, -32021);
  assert.deepEqual(none.msg.error.data.requiredCapabilities, { elicitation: {} });
});

test("ctx:ask in a session: the tool's questions are requests to the client, answered while the call waits", T, async () => {
  const dir = setup({ "ws/a.txt": "a\n" });
  fs.writeFileSync(path.join(dir, "burrow.yaml"), `roots: [ws]\ntools: [read_file, ${ASK_TOOL}]\n`);
  const s = await serve(["--config", path.join(dir, "burrow.yaml")]);
  const c = new Client({ name: "asked", version: "1" }, { capabilities: { elicitation: {} } });
  const asked = [];
  c.setRequestHandler(ElicitRequestSchema, async (req) => {
    asked.push(req.params.message);
    return { action: "accept", content: req.params.message.startsWith("Your name") ? { name: "Ada" } : { colour: "blue" } };
  });
  await c.connect(new StreamableHTTPClientTransport(new URL(s.url)));
  const r = await c.callTool({ name: "ask_twice", arguments: { topic: "t" } });
  assert.equal(text(r), "Ada likes blue");
  assert.deepEqual(asked, ["Your name? (t)", "Your colour?"]);
  await c.close();
});

test("Mcp-Param-* headers (SEP-2243): an argument marked x-mcp-header must come again in its header, the same", T, async () => {
  const dir = setup({ "ws/a.txt": "a\n", "region.lua": `return { name = "by_region", description = "test only",
  input_schema = { type = "object", properties = { region = { type = "string", ["x-mcp-header"] = "Region" } }, required = { "region" } },
  annotations = { readOnlyHint = true }, permissions = {}, risk = "low",
  handler = function(_, a) return { text = "region " .. a.region } end,
  render = function(r) return r.text, {} end }
` });
  fs.writeFileSync(path.join(dir, "burrow.yaml"), "roots: [ws]\ntools: [read_file, ./region.lua]\n");
  const s = await serve(["--config", path.join(dir, "burrow.yaml")]);
  const listed = (await post(s.url, "tools/list")).msg.result.tools.find((t) => t.name === "by_region");
  assert.equal(listed.inputSchema.properties.region["x-mcp-header"], "Region", "the marker is listed as given");
  const call = (region, headers) => post(s.url, "tools/call", { name: "by_region", arguments: { region } }, { headers, id: 9 });
  // a proxy that routes on Mcp-Param-Region sees what the tool gets
  const ok = await call("eu-west", { "mcp-param-region": " eu-west " });
  assert.equal(ok.status, 200);
  assert.equal(text(ok.msg.result), "region eu-west");
  const b64 = await call("zürich", { "mcp-param-region": `=?base64?${Buffer.from("zürich").toString("base64")}?=` });
  assert.equal(b64.status, 200, JSON.stringify(b64.msg));
  for (const [what, headers, region] of [["another value", { "mcp-param-region": "us-east" }, "eu-west"],
    ["no header", {}, "eu-west"], ["bad Base64", { "mcp-param-region": "=?base64?ZXUtd2VzdA?=" }, "eu-west"],
    ["the Base64 of another value", { "mcp-param-region": `=?base64?${Buffer.from("us-east").toString("base64")}?=` }, "eu-west"]]) {
    const r = await call(region, headers);
    assert.equal(r.status, 400, `${what}: ${JSON.stringify(r.msg)}`);
    assert.equal(r.msg.error.code, -32020, what);
    assert.equal(r.msg.id, 9);
  }
});
