// End-to-end suite: drives `build/burrow mcp` over stdio, with the official MCP
// TypeScript SDK client (Client + StdioClientTransport) for the tool round
// trips, and with a minimal raw JSON-RPC client where the SDK would hide what
// is under test (version negotiation, malformed input, error codes of the
// protocol layer, very large results).
//
//   cd test/e2e && npm ci && node --test          (or: make test)
//   BURROW_BIN=/path/to/burrow node --test test/e2e/
//   BURROW_RESOLVER=walk node --test test/e2e/    (BURROW_* variables reach the server)
//
// Every test file gets its own temporary workspace (mkdtemp), removed at the end.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync, execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport, getDefaultEnvironment } from "@modelcontextprotocol/sdk/client/stdio.js";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const REPO = path.resolve(HERE, "..", "..");
const BIN = path.resolve(process.env.BURROW_BIN || path.join(REPO, "build", "burrow"));

const PROTOCOL_VERSIONS = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];
const NEWEST = PROTOCOL_VERSIONS[0];
const NATIVE_TOOLS = ["read_file", "write_file", "edit_file", "edit_files", "insert_lines", "append_file", "list_dir", "stat",
  "grep", "glob", "mkdir", "remove", "move", "copy", "undo_edit", "notebook_edit"];
const BIG_CAPS = ["--cap", "max_result_bytes=64MiB", "--cap", "max_file_size=64MiB"];
const T = { timeout: 30_000 };

// ---------------------------------------------------------------- helpers

let TMP; // per-file scratch dir; every test makes its own workspace inside it
let counter = 0;

before(() => {
  // realpath: on some systems the temp dir is behind a symlink; the server is
  // given (and reports) the real path.
  TMP = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "burrow-e2e-")));
});

after(() => {
  if (TMP) fs.rmSync(TMP, { recursive: true, force: true });
});

/** A fresh, empty workspace directory (inside the per-file temp dir). */
function workspace(files = {}) {
  const dir = path.join(TMP, `ws${++counter}`);
  fs.mkdirSync(dir);
  for (const [rel, body] of Object.entries(files)) {
    const p = path.join(dir, rel);
    fs.mkdirSync(path.dirname(p), { recursive: true });
    fs.writeFileSync(p, body);
  }
  return dir;
}

const sha256 = (data) => "sha256:" + createHash("sha256").update(data).digest("hex");

/** Line-numbered text as read_file renders it, without a trailing newline. */
const numbered = (lines, first = 1) => lines.map((l, i) => `${first + i}\t${l}`).join("\n");
const chomp = (s) => (s.endsWith("\n") ? s.slice(0, -1) : s);

/**
 * The numbered lines of a read_file result's text, joined by "\n". The text
 * must start with numbered lines; after them only a trailer of unnumbered
 * lines is tolerated (e.g. a "continue with offset=N" hint for the model).
 */
function linesOf(result) {
  const all = chomp(textOf(result)).split("\n");
  let k = 0;
  while (k < all.length && /^\d+\t/.test(all[k])) k++;
  assert.ok(k > 0 || all.join("") === "", `read_file text starts with numbered lines: ${JSON.stringify(all.slice(0, 3))}`);
  for (const l of all.slice(k)) assert.ok(!/^\d+\t/.test(l), `numbered line after the trailer: ${JSON.stringify(l.slice(0, 100))}`);
  return all.slice(0, k).join("\n");
}

function textOf(result) {
  assert.ok(Array.isArray(result.content), "result.content is an array");
  assert.ok(result.content.length >= 1, "result.content is not empty");
  assert.equal(result.content[0].type, "text");
  return result.content.map((c) => c.text ?? "").join("");
}

function assertOk(result, what = "tool call") {
  if (result.isError) assert.fail(`${what} failed: ${textOf(result)}`);
  assert.equal(typeof result.structuredContent, "object", `${what}: structuredContent present`);
  assert.ok(result.structuredContent !== null);
  return result.structuredContent;
}

/** A tool-level failure: isError result, text starting with the code, _meta code. */
function assertToolError(result, codes, what = "tool call") {
  codes = [].concat(codes);
  assert.equal(result.isError, true, `${what}: expected isError, got ${JSON.stringify(result).slice(0, 400)}`);
  const text = textOf(result);
  const code = result._meta?.["burrow/code"];
  assert.ok(codes.includes(code), `${what}: _meta["burrow/code"] = ${JSON.stringify(code)}, expected one of ${codes}`);
  assert.ok(text.startsWith(code), `${what}: text should start with ${code}: ${JSON.stringify(text.slice(0, 200))}`);
  return { code, text };
}

/** Every stdout line must be a JSON-RPC 2.0 message: nothing but protocol on stdout. */
function assertOnlyJsonRpc(lines) {
  for (const line of lines) {
    let msg;
    try {
      msg = JSON.parse(line);
    } catch {
      assert.fail(`non-JSON line on stdout: ${JSON.stringify(line.slice(0, 200))}`);
    }
    assert.equal(msg.jsonrpc, "2.0", `not a JSON-RPC 2.0 message: ${line.slice(0, 200)}`);
    const isResponse = "id" in msg && ("result" in msg || "error" in msg);
    const isRequestOrNotification = typeof msg.method === "string";
    assert.ok(isResponse || isRequestOrNotification, `neither response nor request: ${line.slice(0, 200)}`);
  }
}

/**
 * Minimal JSON-RPC-over-stdio client. Splits stdout on "\n" with linear
 * buffering (fine for 50+ MiB responses), keeps every raw line so tests can
 * check that stdout carries only protocol messages.
 */
class RawSession {
  constructor(args, { cwd } = {}) {
    this.proc = spawn(BIN, ["mcp", ...args], { cwd, stdio: ["pipe", "pipe", "pipe"] });
    this.lines = [];
    this.messages = [];
    this.pending = new Map();
    this.watchers = [];
    this.chunks = [];
    this.stderr = "";
    this.nextId = 1;
    this.spawnError = null;
    this.proc.on("error", (e) => { this.spawnError = e; this.failAll(e); });
    this.proc.stderr.setEncoding("utf8");
    this.proc.stderr.on("data", (d) => { if (this.stderr.length < 65536) this.stderr += d; });
    this.proc.stdout.on("data", (d) => this.onData(d));
    this.proc.stdin.on("error", () => {}); // EPIPE if the server died: reported via exit
    this.exited = new Promise((resolve) => {
      this.proc.on("close", (code, signal) => {
        this.exit = { code, signal };
        this.failAll(new Error(`server exited (code ${code}, signal ${signal}); stderr: ${this.stderr.slice(-2000)}`));
        resolve(this.exit);
      });
    });
  }
  failAll(err) {
    for (const p of this.pending.values()) p.reject(err);
    this.pending.clear();
    for (const w of this.watchers) w.reject(err);
    this.watchers = [];
  }
  onData(chunk) {
    let start = 0;
    for (;;) {
      const nl = chunk.indexOf(10, start);
      if (nl < 0) {
        if (start < chunk.length) this.chunks.push(chunk.subarray(start));
        return;
      }
      const piece = chunk.subarray(start, nl);
      const buf = this.chunks.length ? Buffer.concat([...this.chunks, piece]) : piece;
      this.chunks = [];
      start = nl + 1;
      this.onLine(buf.toString("utf8"));
    }
  }
  onLine(line) {
    if (line.endsWith("\r")) line = line.slice(0, -1);
    this.lines.push(line);
    let msg;
    try { msg = JSON.parse(line); } catch { return; } // assertOnlyJsonRpc reports it
    this.messages.push(msg);
    if (msg.method !== undefined && msg.id !== undefined) {
      // server -> client request
      if (msg.method === "ping") this.send({ jsonrpc: "2.0", id: msg.id, result: {} });
      else this.send({ jsonrpc: "2.0", id: msg.id, error: { code: -32601, message: "Method not found" } });
    } else if (msg.id !== undefined && msg.id !== null && this.pending.has(msg.id)) {
      const p = this.pending.get(msg.id);
      this.pending.delete(msg.id);
      p.resolve(msg);
    }
    for (const w of [...this.watchers]) {
      if (w.pred(msg)) {
        this.watchers.splice(this.watchers.indexOf(w), 1);
        w.resolve(msg);
      }
    }
  }
  sendLine(line) { this.proc.stdin.write(line + "\n"); }
  send(obj) { this.sendLine(JSON.stringify(obj)); }
  notify(method, params) { this.send(params === undefined ? { jsonrpc: "2.0", method } : { jsonrpc: "2.0", method, params }); }
  /** Sends a request, resolves with the whole response message ({result} or {error}). */
  request(method, params, timeoutMs = 20_000) {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      if (this.spawnError) return reject(this.spawnError);
      if (this.exit) return reject(new Error(`server already exited: ${JSON.stringify(this.exit)}; stderr: ${this.stderr.slice(-2000)}`));
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error(`no response to ${method} (id ${id}) within ${timeoutMs} ms; stderr: ${this.stderr.slice(-2000)}`));
      }, timeoutMs);
      this.pending.set(id, {
        resolve: (m) => { clearTimeout(timer); resolve(m); },
        reject: (e) => { clearTimeout(timer); reject(e); },
      });
      this.send(params === undefined ? { jsonrpc: "2.0", id, method } : { jsonrpc: "2.0", id, method, params });
    });
  }
  /** Resolves with the first message (already received or future) matching pred. */
  waitFor(pred, timeoutMs = 20_000) {
    const seen = this.messages.find(pred);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no matching message within ${timeoutMs} ms; stderr: ${this.stderr.slice(-2000)}`)), timeoutMs);
      this.watchers.push({
        pred,
        resolve: (m) => { clearTimeout(timer); resolve(m); },
        reject: (e) => { clearTimeout(timer); reject(e); },
      });
    });
  }
  async initialize(protocolVersion = NEWEST) {
    const r = await this.request("initialize", {
      protocolVersion, capabilities: {}, clientInfo: { name: "burrow-e2e-raw", version: "0.0.0" },
    });
    assert.equal(r.error, undefined, `initialize failed: ${JSON.stringify(r.error)}`);
    this.notify("notifications/initialized");
    return r.result;
  }
  async call(name, args, timeoutMs) {
    const r = await this.request("tools/call", { name, arguments: args }, timeoutMs);
    if (r.error) assert.fail(`tools/call ${name}: JSON-RPC error ${JSON.stringify(r.error)}`);
    return r.result;
  }
  /** Closes stdin and waits for the server to exit (kills it after 5 s). */
  async close() {
    try { this.proc.stdin.end(); } catch {}
    let timer;
    const killed = new Promise((resolve) => {
      timer = setTimeout(() => { try { this.proc.kill("SIGKILL"); } catch {} resolve(); }, 5000);
    });
    await Promise.race([this.exited, killed]);
    await this.exited;
    clearTimeout(timer);
    return this.exit;
  }
}

/** Runs fn with a raw session; always closes it. */
async function withRaw(args, fn, opts) {
  const s = new RawSession(args, opts);
  try {
    return await fn(s);
  } finally {
    await s.close();
  }
}

/** Runs fn with an SDK client connected to `burrow mcp ARGS`; tools are listed first (so callTool validates structuredContent). */
async function withSdk(args, fn, { cwd } = {}) {
  // the SDK passes only a few variables to the server by default; keep BURROW_* (e.g. BURROW_RESOLVER=walk)
  const env = { ...getDefaultEnvironment(), ...Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith("BURROW_"))) };
  const transport = new StdioClientTransport({ command: BIN, args: ["mcp", ...args], cwd, env, stderr: "pipe" });
  let stderr = "";
  transport.stderr?.on("data", (d) => { if (stderr.length < 65536) stderr += d; });
  const client = new Client({ name: "burrow-e2e", version: "0.0.0" }, { capabilities: {} });
  try {
    await client.connect(transport);
  } catch (e) {
    e.message += `; stderr: ${stderr.slice(-2000)}`;
    throw e;
  }
  try {
    const { tools } = await client.listTools();
    return await fn(client, tools);
  } catch (e) {
    if (stderr) e.message += `\n--- server stderr ---\n${stderr.slice(-2000)}`;
    throw e;
  } finally {
    await client.close();
  }
}

const call = (client, name, args, options) => client.callTool({ name, arguments: args }, undefined, options);

// ---------------------------------------------------------------- tests

test("the burrow binary exists and is executable", () => {
  assert.ok(fs.existsSync(BIN), `${BIN} does not exist (build it with make, or set BURROW_BIN)`);
  fs.accessSync(BIN, fs.constants.X_OK);
});

test("initialize negotiates each supported protocol revision (raw)", T, async () => {
  const ws = workspace();
  for (const v of PROTOCOL_VERSIONS) {
    await withRaw(["--root", ws], async (s) => {
      const r = await s.initialize(v);
      assert.equal(r.protocolVersion, v, `requested ${v}`);
      assert.match(r.serverInfo?.name ?? "", /^burrow/, "serverInfo.name");
      assert.equal(typeof r.serverInfo.version, "string");
      assert.equal(typeof r.capabilities, "object");
      assert.ok(r.capabilities.tools, "capabilities.tools advertised");
      const p = await s.request("ping");
      assert.deepEqual(p.result, {});
      assertOnlyJsonRpc(s.lines);
    });
  }
});

test("initialize with an unknown protocol version gets the newest (raw)", T, async () => {
  const ws = workspace();
  for (const v of ["1999-01-01", "2099-12-31"]) {
    await withRaw(["--root", ws], async (s) => {
      const r = await s.initialize(v);
      assert.equal(r.protocolVersion, NEWEST, `requested ${v}`);
    });
  }
});

test("the SDK client connects and sees the burrow server", T, async () => {
  const ws = workspace();
  await withSdk(["--root", ws], async (client) => {
    assert.match(client.getServerVersion()?.name ?? "", /^burrow/);
    assert.ok(client.getServerCapabilities()?.tools, "tools capability");
    await client.ping();
  });
});

test("protocol robustness: ping, unknown method, unknown tool, malformed JSON, notifications (raw)", T, async () => {
  const ws = workspace({ "a.txt": "hello\n" });
  await withRaw(["--root", ws], async (s) => {
    await s.initialize();

    const ping = await s.request("ping");
    assert.deepEqual(ping.result, {});
    assert.equal(ping.error, undefined);

    const unknown = await s.request("no/such/method", {});
    assert.equal(unknown.result, undefined);
    assert.equal(unknown.error?.code, -32601, `unknown method: ${JSON.stringify(unknown)}`);

    const unknownTool = await s.request("tools/call", { name: "no_such_tool", arguments: {} });
    assert.equal(unknownTool.result, undefined, `unknown tool must be a JSON-RPC error: ${JSON.stringify(unknownTool)}`);
    assert.equal(unknownTool.error?.code, -32602);

    // malformed JSON: a parse error with id null, and the server keeps serving
    s.sendLine('{"jsonrpc":"2.0","id":99,"method":"ping"');
    const parseErr = await s.waitFor((m) => m.error?.code === -32700);
    assert.equal(parseErr.id, null, "parse error has id null");
    s.sendLine("this is not json at all");
    const stillThere = await s.request("ping");
    assert.deepEqual(stillThere.result, {}, "server still serves after malformed input");
    const parseErrors = s.messages.filter((m) => m.error !== undefined && m.id === null);
    assert.equal(parseErrors.length, 2, "one parse error per malformed line");
    for (const m of parseErrors) assert.equal(m.error.code, -32700);

    // notifications in between requests: no response, nothing breaks
    const before = s.messages.length;
    s.notify("notifications/initialized");
    s.notify("notifications/cancelled", { requestId: 12345, reason: "test" });
    s.notify("notifications/no_such_notification", { x: 1 });
    s.notify("notifications/roots/list_changed");
    const r1 = await s.call("read_file", { path: "a.txt" });
    assertOk(r1);
    s.notify("notifications/progress", { progressToken: "t", progress: 1 });
    const r2 = await s.request("ping");
    assert.deepEqual(r2.result, {});
    const after = s.messages.slice(before);
    assert.equal(after.length, 2, `exactly two responses after the notifications, got ${JSON.stringify(after).slice(0, 500)}`);
    for (const m of after) assert.notEqual(m.id, undefined);

    // every request got exactly one response
    const ids = s.messages.filter((m) => m.id !== null && m.id !== undefined && m.method === undefined).map((m) => m.id);
    assert.equal(new Set(ids).size, ids.length, "no duplicate responses");
    assertOnlyJsonRpc(s.lines);
  });
});

test("the server exits cleanly when stdin closes, and writes only JSON-RPC to stdout", T, async () => {
  const ws = workspace({ "f.txt": "x\n" });
  const s = new RawSession(["--root", ws]);
  await s.initialize();
  await s.request("tools/list", {});
  await s.call("read_file", { path: "f.txt" });
  await s.call("read_file", { path: "missing.txt" });
  await s.call("list_dir", {});
  await s.call("stat", { path: "../outside" });
  await s.request("tools/call", { name: "nope", arguments: {} });
  const exit = await s.close();
  assert.deepEqual(exit, { code: 0, signal: null }, `exit status; stderr: ${s.stderr.slice(-1000)}`);
  assert.equal(s.lines.length, 7, `one line per response, nothing else (${s.lines.length})`);
  assertOnlyJsonRpc(s.lines);
});

test("tools/list: the native tools with annotations, input and output schemas", T, async () => {
  const ws = workspace();
  await withSdk(["--root", ws], async (_client, tools) => {
    const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
    for (const name of NATIVE_TOOLS) {
      const t = byName[name];
      assert.ok(t, `tool ${name} listed (have: ${Object.keys(byName)})`);
      assert.equal(typeof t.description, "string");
      assert.ok(t.description.length > 20, `${name} has a real description`);
      assert.equal(t.inputSchema?.type, "object", `${name} inputSchema.type`);
      assert.equal(typeof t.inputSchema.properties, "object", `${name} inputSchema.properties`);
      assert.equal(t.outputSchema?.type, "object", `${name} outputSchema.type`);
      assert.equal(typeof t.annotations, "object", `${name} annotations`);
      assert.equal(typeof t.annotations.readOnlyHint, "boolean", `${name} annotations.readOnlyHint`);
    }
    const props = (n) => Object.keys(byName[n].inputSchema.properties);
    const req = (n) => byName[n].inputSchema.required ?? [];

    for (const f of ["path", "offset", "limit", "encoding"]) assert.ok(props("read_file").includes(f), `read_file.${f}`);
    assert.deepEqual(req("read_file"), ["path"]);
    for (const f of ["path", "content", "encoding", "create_dirs", "expected_hash"]) assert.ok(props("write_file").includes(f), `write_file.${f}`);
    assert.deepEqual([...req("write_file")].sort(), ["content", "path"]);
    for (const f of ["path", "recursive", "max_depth", "include_hidden"]) assert.ok(props("list_dir").includes(f), `list_dir.${f}`);
    assert.ok(!req("list_dir").includes("path"), "list_dir.path is optional");
    assert.deepEqual(req("stat"), ["path"]);

    assert.equal(byName.read_file.annotations.readOnlyHint, true);
    assert.equal(byName.list_dir.annotations.readOnlyHint, true);
    assert.equal(byName.stat.annotations.readOnlyHint, true);
    assert.equal(byName.write_file.annotations.readOnlyHint, false);

    for (const f of ["path", "total_lines", "start_line", "end_line", "size", "content_hash", "newline", "bom", "truncated"]) {
      assert.ok(f in (byName.read_file.outputSchema.properties ?? {}), `read_file outputSchema has ${f}`);
    }
    for (const f of ["path", "bytes", "content_hash", "created"]) {
      assert.ok(f in (byName.write_file.outputSchema.properties ?? {}), `write_file outputSchema has ${f}`);
    }
  });
});

test("write_file then read_file round trip through the SDK", T, async () => {
  const ws = workspace();
  const body = "alpha\nbeta\ngamma δ ✓\n";
  await withSdk(["--root", ws], async (client) => {
    const w = assertOk(await call(client, "write_file", { path: "notes/hello.txt", content: body }), "write_file");
    assert.equal(w.bytes, Buffer.byteLength(body));
    assert.equal(w.created, true);
    assert.equal(w.content_hash, sha256(body));
    assert.match(w.content_hash, /^sha256:[0-9a-f]{64}$/);
    assert.equal(typeof w.path, "string");
    assert.equal(fs.readFileSync(path.join(ws, "notes/hello.txt"), "utf8"), body, "file on disk");

    const res = await call(client, "read_file", { path: "notes/hello.txt" });
    const r = assertOk(res, "read_file");
    assert.equal(linesOf(res), numbered(["alpha", "beta", "gamma δ ✓"]));
    assert.equal(r.total_lines, 3);
    assert.equal(r.start_line, 1);
    assert.equal(r.end_line, 3);
    assert.equal(r.size, Buffer.byteLength(body));
    assert.equal(r.content_hash, w.content_hash, "same hash from write and read");
    assert.equal(r.newline, "lf");
    assert.equal(r.bom, false);
    assert.equal(r.truncated, false);
    assert.ok(!JSON.stringify(r).includes("alpha"), "file text is not duplicated in structuredContent");

    // overwrite: created=false, new hash, read sees new content
    const body2 = "one line only\n";
    const w2 = assertOk(await call(client, "write_file", { path: "notes/hello.txt", content: body2 }), "overwrite");
    assert.equal(w2.created, false);
    assert.equal(w2.bytes, body2.length);
    assert.equal(w2.content_hash, sha256(body2));
    const r2 = await call(client, "read_file", { path: "notes/hello.txt" });
    assert.equal(linesOf(r2), "1\tone line only");
    assert.equal(r2.structuredContent.content_hash, w2.content_hash);
    assert.equal(fs.readFileSync(path.join(ws, "notes/hello.txt"), "utf8"), body2);
    // atomic write leaves no temp files behind
    assert.deepEqual(fs.readdirSync(path.join(ws, "notes")), ["hello.txt"]);
  });
});

test("read_file reports newline style, BOM, empty and unterminated files", T, async () => {
  const ws = workspace({
    "crlf.txt": "line one\r\nline two\r\nline three\r\n",
    "mixed.txt": "a\r\nb\nc\n",
    "none.txt": "no newline here",
    "bom.txt": "\uFEFFwith bom\n",
    "empty.txt": "",
  });
  await withSdk(["--root", ws], async (client) => {
    const crlf = await call(client, "read_file", { path: "crlf.txt" });
    const c = assertOk(crlf, "crlf");
    assert.equal(c.newline, "crlf");
    assert.equal(c.total_lines, 3);
    assert.equal(c.size, Buffer.byteLength("line one\r\nline two\r\nline three\r\n"));
    assert.equal(c.content_hash, sha256(fs.readFileSync(path.join(ws, "crlf.txt"))));
    assert.equal(linesOf(crlf).replaceAll("\r", ""), numbered(["line one", "line two", "line three"]));

    assert.equal(assertOk(await call(client, "read_file", { path: "mixed.txt" })).newline, "mixed");

    const none = await call(client, "read_file", { path: "none.txt" });
    const n = assertOk(none);
    assert.equal(n.newline, "none");
    assert.equal(n.total_lines, 1);
    assert.equal(linesOf(none), "1\tno newline here");

    const bom = assertOk(await call(client, "read_file", { path: "bom.txt" }));
    assert.equal(bom.bom, true);
    assert.equal(bom.newline, "lf");

    const empty = assertOk(await call(client, "read_file", { path: "empty.txt" }));
    assert.equal(empty.size, 0);
    assert.equal(empty.total_lines, 0);
    assert.equal(empty.content_hash, sha256(""));
    assert.equal(empty.truncated, false);
  });
});

test("read_file offset/limit select a window of lines", T, async () => {
  const lines = Array.from({ length: 10 }, (_, i) => `line${i + 1}`);
  const ws = workspace({ "ten.txt": lines.join("\n") + "\n" });
  await withSdk(["--root", ws], async (client) => {
    const res = await call(client, "read_file", { path: "ten.txt", offset: 3, limit: 4 });
    const r = assertOk(res);
    assert.equal(linesOf(res), numbered(lines.slice(2, 6), 3));
    assert.equal(r.start_line, 3);
    assert.equal(r.end_line, 6);
    assert.equal(r.total_lines, 10);
    if (r.next_offset !== undefined) assert.equal(r.next_offset, 7);

    const tail = await call(client, "read_file", { path: "ten.txt", offset: 9 });
    assert.equal(linesOf(tail), numbered(["line9", "line10"], 9));
    assert.equal(tail.structuredContent.end_line, 10);
    assert.equal(tail.structuredContent.next_offset, undefined, "no next_offset at the end of the file");

    const one = await call(client, "read_file", { path: "ten.txt", limit: 1 });
    assert.equal(linesOf(one), "1\tline1");
  });
});

test("read_file tail: the last lines, unnumbered, with a structured part the schema accepts (SDK)", T, async () => {
  const lines = Array.from({ length: 5000 }, (_, i) => `row ${i + 1}`);
  const ws = workspace({ "log.txt": lines.join("\r\n"), "big.txt": "x\n".repeat(3_000_000) + "last\n" });
  await withSdk(["--root", ws], async (client) => {
    const res = await call(client, "read_file", { path: "log.txt", tail: 3 });
    const r = assertOk(res);
    assert.equal(textOf(res), "row 4998\nrow 4999\nrow 5000", "CR dropped, no newline added at the end");
    assert.equal(r.tail_lines, 3);
    assert.equal(r.truncated, false);
    assert.equal(r.content, undefined, "the text is not repeated in structuredContent");
    assert.equal(r.content_hash, undefined);
    const big = assertOk(await call(client, "read_file", { path: "big.txt", tail: 2 }));
    assert.equal(big.tail_lines, 2);
    assert.equal(big.size, 6_000_005);
    assertToolError(await call(client, "read_file", { path: "log.txt", tail: 2, offset: 1 }), ["INVALID_ARGUMENT"]);
  });
});

test("read_file under the default result cap truncates on a whole line with an exact resume offset", T, async () => {
  // ~1.2 MiB of 120-byte lines: above the default 256 KiB max_result_bytes
  const lines = Array.from({ length: 10_000 }, (_, i) => `${String(i + 1).padStart(8, "0")} ` + "x".repeat(110));
  const ws = workspace({ "wide.txt": lines.join("\n") + "\n" });
  await withSdk(["--root", ws], async (client) => {
    const res = await call(client, "read_file", { path: "wide.txt", limit: 10_000 });
    const r = assertOk(res);
    assert.equal(r.truncated, true);
    assert.equal(r.start_line, 1);
    assert.ok(r.end_line > 1 && r.end_line < 10_000, `end_line ${r.end_line}`);
    assert.equal(r.next_offset, r.end_line + 1);
    const text = chomp(textOf(res));
    const shown = linesOf(res).split("\n");
    assert.equal(shown.length, r.end_line, "every line from 1 to end_line is shown");
    assert.equal(shown.at(-1), `${r.end_line}\t${lines[r.end_line - 1]}`, "ends on a whole line");
    assert.ok(Buffer.byteLength(text) <= 256 * 1024 + 1024, `text is about the cap (${Buffer.byteLength(text)} bytes)`);

    const next = await call(client, "read_file", { path: "wide.txt", offset: r.next_offset, limit: 5 });
    assert.equal(linesOf(next), numbered(lines.slice(r.end_line, r.end_line + 5), r.next_offset));
  });
});

test("write_file: create_dirs, base64, expected_hash compare-and-set", T, async () => {
  const ws = workspace({ "existing.txt": "v1\n" });
  await withSdk(["--root", ws], async (client) => {
    const deep = await call(client, "write_file", { path: "a/b/c/deep.txt", content: "deep\n" });
    assert.equal(assertOk(deep).created, true);
    assert.equal(fs.readFileSync(path.join(ws, "a/b/c/deep.txt"), "utf8"), "deep\n");

    const noDirs = await call(client, "write_file", { path: "x/y/z.txt", content: "z", create_dirs: false });
    assertToolError(noDirs, ["ENOENT", "ENOTDIR"], "create_dirs=false");
    assert.ok(!fs.existsSync(path.join(ws, "x")));

    const bin = Buffer.from([0, 1, 2, 255, 254, 10, 13, 0, 128]);
    const b = assertOk(await call(client, "write_file", { path: "blob.bin", content: bin.toString("base64"), encoding: "base64" }));
    assert.equal(b.bytes, bin.length);
    assert.equal(b.content_hash, sha256(bin));
    assert.deepEqual(fs.readFileSync(path.join(ws, "blob.bin")), bin);

    // compare-and-set
    const h1 = sha256("v1\n");
    const stale = await call(client, "write_file", { path: "existing.txt", content: "v2\n", expected_hash: sha256("something else") });
    assertToolError(stale, ["HASH_MISMATCH", "EEXIST", "POLICY_DENIED"], "stale expected_hash");
    assert.equal(fs.readFileSync(path.join(ws, "existing.txt"), "utf8"), "v1\n", "unchanged after a failed CAS");
    const good = assertOk(await call(client, "write_file", { path: "existing.txt", content: "v2\n", expected_hash: h1 }));
    assert.equal(good.content_hash, sha256("v2\n"));
    assert.equal(fs.readFileSync(path.join(ws, "existing.txt"), "utf8"), "v2\n");

    const absentButThere = await call(client, "write_file", { path: "existing.txt", content: "v3\n", expected_hash: "absent" });
    assertToolError(absentButThere, ["EEXIST", "HASH_MISMATCH"], "expected_hash=absent on an existing file");
    assert.equal(fs.readFileSync(path.join(ws, "existing.txt"), "utf8"), "v2\n");
    const absentOk = assertOk(await call(client, "write_file", { path: "fresh.txt", content: "new\n", expected_hash: "absent" }));
    assert.equal(absentOk.created, true);
  });
});

test("list_dir: entries, recursion, max_depth, hidden files; stat agrees", T, async () => {
  const ws = workspace({
    "top.txt": "12345",
    "sub/inner.txt": "abc",
    "sub/deeper/leaf.txt": "leaf",
    ".hidden": "h",
  });
  fs.symlinkSync("top.txt", path.join(ws, "link"));
  await withSdk(["--root", ws], async (client) => {
    const res = await call(client, "list_dir", {});
    const l = assertOk(res, "list_dir");
    assert.equal(typeof l.truncated, "boolean");
    assert.equal(l.truncated, false);
    const names = l.entries.map((e) => e.name).sort();
    assert.deepEqual(names, ["link", "sub", "top.txt"], "hidden entries are left out by default");
    const byName = Object.fromEntries(l.entries.map((e) => [e.name, e]));
    assert.equal(byName["top.txt"].type, "file");
    assert.equal(byName["top.txt"].size, 5);
    assert.equal(byName.sub.type, "dir");
    assert.equal(byName.link.type, "symlink");
    assert.notEqual(byName["top.txt"].mtime, undefined);
    assert.ok(textOf(res).includes("top.txt"), "text lists the entries");

    // the path of an entry can be passed back
    const st = assertOk(await call(client, "stat", { path: byName["top.txt"].path }), "stat of a listed path");
    assert.equal(st.type, "file");
    assert.equal(st.size, 5);
    assert.equal(st.name, "top.txt");
    assert.equal(st.is_symlink, false);
    assert.ok(st.nlink >= 1);
    assert.ok(st.mode !== undefined && st.mode !== null, "stat has a mode");
    assert.notEqual(st.mtime, undefined, "stat has an mtime");

    const hidden = assertOk(await call(client, "list_dir", { include_hidden: true }));
    assert.ok(hidden.entries.some((e) => e.name === ".hidden"), "include_hidden shows dotfiles");

    const rec = assertOk(await call(client, "list_dir", { path: "sub", recursive: true }));
    const recNames = rec.entries.map((e) => e.name);
    for (const n of ["inner.txt", "deeper", "leaf.txt"]) assert.ok(recNames.includes(n), `recursive listing has ${n}: ${recNames}`);
    const leaf = rec.entries.find((e) => e.name === "leaf.txt");
    assert.equal(assertOk(await call(client, "stat", { path: leaf.path })).size, 4, "recursive entry path is usable");

    const shallow = assertOk(await call(client, "list_dir", { path: "sub", recursive: true, max_depth: 1 }));
    const shallowNames = shallow.entries.map((e) => e.name);
    assert.ok(shallowNames.includes("inner.txt") && shallowNames.includes("deeper"), `max_depth 1: ${shallowNames}`);
    assert.ok(!shallowNames.includes("leaf.txt"), `max_depth 1 does not descend: ${shallowNames}`);

    const flat = assertOk(await call(client, "list_dir", { path: "sub" }));
    assert.deepEqual(flat.entries.map((e) => e.name).sort(), ["deeper", "inner.txt"]);

    const sl = assertOk(await call(client, "stat", { path: "link" }));
    assert.equal(sl.type, "symlink", "stat has lstat semantics");
    assert.equal(sl.is_symlink, true);
    assert.equal(sl.target, "top.txt");
    const sd = assertOk(await call(client, "stat", { path: "sub" }));
    assert.equal(sd.type, "dir");
  });
});

test("errors: ENOENT, ENOTDIR, EISDIR, OUTSIDE_ROOT, invalid arguments, BINARY, NOT_REGULAR", T, async () => {
  const ws = workspace({ "file.txt": "data\n", "dir/x.txt": "x" });
  fs.writeFileSync(path.join(ws, "bin.dat"), Buffer.from([0x7f, 0x45, 0x4c, 0x46, 0, 0, 0, 1, 2, 3, 0, 0]));
  const SECRET = "SECRET_OUTSIDE_7731";
  fs.writeFileSync(path.join(TMP, `${path.basename(ws)}_evil.txt`), SECRET + "\n");
  fs.mkdirSync(`${ws}_evil`);
  fs.writeFileSync(path.join(`${ws}_evil`, "x"), SECRET + "\n");
  const leaked = (r) => JSON.stringify(r).includes(SECRET) || JSON.stringify(r).includes("root:x:0:0");
  fs.symlinkSync("/etc", path.join(ws, "etc-link"));
  fs.symlinkSync("../", path.join(ws, "up"));
  let fifo = false;
  try { execFileSync("mkfifo", [path.join(ws, "pipe")]); fifo = true; } catch {}

  await withSdk(["--root", ws], async (client) => {
    const missing = await call(client, "read_file", { path: "notes.txt" });
    const e = assertToolError(missing, "ENOENT", "missing file");
    assert.ok(e.text.includes("notes.txt"), "message names the path");
    assert.ok(!e.text.includes(TMP), "message does not reveal the host path of a relative path");
    assertToolError(await call(client, "stat", { path: "nope/deeper" }), "ENOENT", "stat missing");
    assertToolError(await call(client, "list_dir", { path: "file.txt" }), "ENOTDIR", "list_dir of a file");
    assertToolError(await call(client, "read_file", { path: "dir" }), "EISDIR", "read_file of a directory");
    assertToolError(await call(client, "write_file", { path: "dir", content: "x" }), ["EISDIR", "NOT_REGULAR"], "write over a directory");

    for (const p of ["../x", "dir/../../x", "/etc/passwd", "/", `${ws}_evil/x`, `${ws}/../${path.basename(ws)}_evil.txt`]) {
      const r = await call(client, "read_file", { path: p });
      assertToolError(r, "OUTSIDE_ROOT", `read_file ${p}`);
      assert.ok(!leaked(r), "nothing leaked");
    }
    assertToolError(await call(client, "write_file", { path: "../escape.txt", content: "x" }), "OUTSIDE_ROOT", "write ../");
    assert.ok(!fs.existsSync(path.join(TMP, "escape.txt")), "nothing written outside");
    assertToolError(await call(client, "list_dir", { path: ".." }), "OUTSIDE_ROOT", "list_dir ..");
    assertToolError(await call(client, "stat", { path: "/etc" }), "OUTSIDE_ROOT", "stat /etc");

    // symlinks that lead out of the root are refused, not followed
    for (const p of ["etc-link/passwd", "up/" + path.basename(ws) + "_evil.txt"]) {
      const r = await call(client, "read_file", { path: p });
      assertToolError(r, ["OUTSIDE_ROOT", "ELOOP", "EACCES"], `read through symlink ${p}`);
      assert.ok(!leaked(r), "nothing leaked");
    }
    assertToolError(await call(client, "write_file", { path: "up/planted.txt", content: "x" }), ["OUTSIDE_ROOT", "ELOOP", "EACCES"], "write through symlink");
    assert.ok(!fs.existsSync(path.join(TMP, "planted.txt")));

    // schema violations name the field
    const noPath = await call(client, "read_file", {});
    assert.ok(assertToolError(noPath, "INVALID_ARGUMENT", "missing path").text.includes("path"));
    const badType = await call(client, "read_file", { path: "file.txt", limit: "ten" });
    assert.ok(assertToolError(badType, "INVALID_ARGUMENT", "limit of the wrong type").text.includes("limit"));
    const extra = await call(client, "stat", { path: "file.txt", bogus_field: 1 });
    assert.ok(assertToolError(extra, "INVALID_ARGUMENT", "unknown argument").text.includes("bogus_field"));
    const badEnum = await call(client, "read_file", { path: "file.txt", encoding: "utf-16" });
    assert.ok(assertToolError(badEnum, "INVALID_ARGUMENT", "bad encoding").text.includes("encoding"));
    const noContent = await call(client, "write_file", { path: "w.txt" });
    assert.ok(assertToolError(noContent, "INVALID_ARGUMENT", "write without content").text.includes("content"));
    assert.ok(!fs.existsSync(path.join(ws, "w.txt")));

    assertToolError(await call(client, "read_file", { path: "bin.dat" }), "BINARY", "binary file as text");
    const b64 = await call(client, "read_file", { path: "bin.dat", encoding: "base64" });
    assertOk(b64, "binary file as base64");
    assert.equal(b64.structuredContent.content_hash, sha256(fs.readFileSync(path.join(ws, "bin.dat"))));

    if (fifo) {
      // must answer (not block on open) and refuse
      assertToolError(await call(client, "read_file", { path: "pipe" }, { timeout: 10_000 }), "NOT_REGULAR", "read a FIFO");
      assertToolError(await call(client, "write_file", { path: "pipe", content: "x" }, { timeout: 10_000 }), "NOT_REGULAR", "write a FIFO");
      const st = assertOk(await call(client, "stat", { path: "pipe" }));
      assert.equal(st.type, "other");
    }
  });
});

test("read-only roots refuse writes with READ_ONLY_ROOT (DIR::ro and DIR:MOUNT:ro)", T, async () => {
  const ro = workspace({ "keep.txt": "original\n" });
  const rw = workspace();
  await withSdk(["--root", `${ro}::ro`], async (client) => {
    const r = assertOk(await call(client, "read_file", { path: "keep.txt" }));
    assert.equal(r.total_lines, 1);
    assertToolError(await call(client, "write_file", { path: "keep.txt", content: "changed\n" }), "READ_ONLY_ROOT", "overwrite in ro root");
    assertToolError(await call(client, "write_file", { path: "new.txt", content: "x" }), "READ_ONLY_ROOT", "create in ro root");
    assertToolError(await call(client, "write_file", { path: `${ro}/new2.txt`, content: "x" }), "READ_ONLY_ROOT", "absolute path in ro root");
  });
  assert.equal(fs.readFileSync(path.join(ro, "keep.txt"), "utf8"), "original\n");
  assert.deepEqual(fs.readdirSync(ro), ["keep.txt"]);

  // two roots: the first (rw) is where relative paths go; the second is mounted read-only
  await withSdk(["--root", `${rw}:/work`, "--root", `${ro}:/ref:ro`], async (client) => {
    const res = await call(client, "read_file", { path: "/ref/keep.txt" });
    assertOk(res);
    assert.equal(linesOf(res), "1\toriginal");
    assertToolError(await call(client, "write_file", { path: "/ref/keep.txt", content: "changed\n" }), "READ_ONLY_ROOT", "write to /ref");
    const w = assertOk(await call(client, "write_file", { path: "/work/out.txt", content: "ok\n" }));
    assert.equal(w.created, true);
    assertOk(await call(client, "write_file", { path: "rel.txt", content: "rel\n" }));
    assert.equal(fs.readFileSync(path.join(rw, "rel.txt"), "utf8"), "rel\n", "relative paths resolve against the first root");
    assert.equal(fs.readFileSync(path.join(rw, "out.txt"), "utf8"), "ok\n");
  });
  assert.equal(fs.readFileSync(path.join(ro, "keep.txt"), "utf8"), "original\n");
  assert.deepEqual(fs.readdirSync(ro), ["keep.txt"]);
});

test("a mounted root (DIR:/workspace) works by virtual path and never shows the host path", T, async () => {
  const ws = workspace({ "src/main.c": "int main(void) { return 0; }\n" });
  const results = [];
  await withSdk(["--root", `${ws}:/workspace`], async (client, tools) => {
    const c = async (name, args) => { const r = await call(client, name, args); results.push(r); return r; };

    const w = assertOk(await c("write_file", { path: "/workspace/x", content: "hello\n" }));
    assert.equal(w.path, "/workspace/x");
    assert.equal(fs.readFileSync(path.join(ws, "x"), "utf8"), "hello\n");

    const r = await c("read_file", { path: "/workspace/x" });
    assert.equal(assertOk(r).path, "/workspace/x");
    assert.equal(linesOf(r), "1\thello");
    assert.equal(r.structuredContent.content_hash, w.content_hash);

    const rel = await c("read_file", { path: "src/main.c" });
    assertOk(rel);

    const st = assertOk(await c("stat", { path: "/workspace/src/main.c" }));
    assert.equal(st.path, "/workspace/src/main.c");
    assert.equal(st.name, "main.c");

    const top = assertOk(await c("list_dir", { path: "/workspace" }));
    assert.deepEqual(top.entries.map((e) => e.name).sort(), ["src", "x"]);
    for (const e of top.entries) assert.ok(e.path.startsWith("/workspace/"), `entry path ${e.path}`);
    const rec = assertOk(await c("list_dir", { path: "/workspace", recursive: true }));
    const main = rec.entries.find((e) => e.name === "main.c");
    assert.equal(main?.path, "/workspace/src/main.c");
    assertOk(await c("list_dir", {}));

    assertToolError(await c("read_file", { path: "/workspace/missing.txt" }), "ENOENT");
    assertToolError(await c("read_file", { path: "/workspace/../etc/passwd" }), "OUTSIDE_ROOT");
    assertToolError(await c("read_file", { path: "/workspaceevil/x" }), "OUTSIDE_ROOT");
    // the host path is not an alias of the mount
    const hr = await call(client, "read_file", { path: path.join(ws, "x") });
    assertToolError(hr, "OUTSIDE_ROOT", "host path under a mount");
    const hw = await call(client, "write_file", { path: path.join(ws, "y"), content: "no" });
    assertToolError(hw, "OUTSIDE_ROOT", "host path write");
    assert.ok(!fs.existsSync(path.join(ws, "y")));
    results.push({ tools });
  });
  const all = JSON.stringify(results);
  assert.ok(all.includes("/workspace"));
  for (const hostPath of [ws, TMP]) {
    for (const r of results) {
      const j = JSON.stringify(r);
      assert.ok(!j.includes(hostPath), `host path ${hostPath} in a result: ${j.slice(0, 400)}`);
    }
  }
  // (hr/hw are left out of that check: an error may echo the path the agent itself sent)
});

test("a 50 MiB file is read whole with raised caps (raw client)", { timeout: 180_000 }, async () => {
  const ws = workspace();
  const nLines = 524_288; // 100-byte lines = 50 MiB, like the bench workspace
  const filler = "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor incididunt ut labore et dolore";
  const bigLine = (j) => `${String(j).padStart(9, "0")} ${filler}`.slice(0, 99);
  const big = path.join(ws, "big.txt");
  const fd = fs.openSync(big, "w");
  const hash = createHash("sha256");
  let expectedChars = 0;
  for (let k = 0; k < nLines; k += 8192) {
    const parts = [];
    for (let j = k; j < Math.min(nLines, k + 8192); j++) {
      const l = bigLine(j);
      parts.push(l + "\n");
      expectedChars += String(j + 1).length + 1 + 99 + 1; // "N\t" + line + "\n"
    }
    const chunk = parts.join("");
    fs.writeSync(fd, chunk);
    hash.update(chunk);
  }
  fs.closeSync(fd);
  assert.equal(fs.statSync(big).size, 50 * 1024 * 1024);

  await withRaw(["--root", ws, ...BIG_CAPS], async (s) => {
    await s.initialize();
    const res = await s.call("read_file", { path: "big.txt", limit: 1_000_000 }, 150_000);
    const r = assertOk(res, "50 MiB read");
    const text = textOf(res);
    assert.ok(text.length === expectedChars || text.length === expectedChars - 1, `text length ${text.length}, expected ${expectedChars} (±final newline)`);
    assert.equal(r.truncated, false);
    assert.equal(r.total_lines, nLines);
    assert.equal(r.start_line, 1);
    assert.equal(r.end_line, nLines);
    assert.equal(r.size, 50 * 1024 * 1024);
    assert.equal(r.content_hash, "sha256:" + hash.digest("hex"));
    let count = 0, i = -1;
    while ((i = text.indexOf("\n", i + 1)) >= 0) count++;
    if (!text.endsWith("\n")) count++;
    assert.equal(count, nLines, "line count");
    assert.equal(text.slice(0, 12), "1\t000000000 ");
    const lastStart = text.lastIndexOf("\n", text.length - 2) + 1;
    assert.equal(text.slice(lastStart, lastStart + 17), `${nLines}\t000524287 `);
    // the whole response is one JSON-RPC line
    assertOnlyJsonRpc(s.lines);
    assert.equal(s.lines.length, 2, "initialize + one response");

    // a small request after the big one still works on the same connection
    const after = await s.call("read_file", { path: "big.txt", offset: 300_000, limit: 2 });
    assert.equal(linesOf(after), numbered([bigLine(299_999), bigLine(300_000)], 300_000));
  });
});

test("burrow call: JSON on stdout, exit 0 ok / 1 tool error / 2 usage", T, async () => {
  const ws = workspace({ "c.txt": "cli\n" });
  const run = (...args) => spawnSync(BIN, args, { cwd: ws, encoding: "utf8", timeout: 20_000, input: "" });

  const ok = run("call", "stat", JSON.stringify({ path: "c.txt" }), "--root", ws);
  assert.equal(ok.status, 0, `exit 0; stderr: ${ok.stderr}`);
  const okJson = JSON.parse(ok.stdout);
  assert.ok(JSON.stringify(okJson).includes('"size":4'), `stat result: ${ok.stdout.slice(0, 300)}`);

  const rd = run("call", "read_file", JSON.stringify({ path: "c.txt" }), "--root", ws);
  assert.equal(rd.status, 0, `exit 0; stderr: ${rd.stderr}`);
  assert.ok(JSON.stringify(JSON.parse(rd.stdout)).includes(sha256("cli\n")), "read_file result has the content hash");

  const err = run("call", "read_file", JSON.stringify({ path: "missing.txt" }), "--root", ws);
  assert.equal(err.status, 1, `tool error exits 1; stdout: ${err.stdout} stderr: ${err.stderr}`);
  assert.ok((err.stdout + err.stderr).includes("ENOENT"));

  const usage = run("call");
  assert.equal(usage.status, 2, `usage error exits 2; stderr: ${usage.stderr}`);
  const badJson = run("call", "stat", "{not json", "--root", ws);
  assert.equal(badJson.status, 2, `malformed JSON args exit 2; stderr: ${badJson.stderr}`);
});
