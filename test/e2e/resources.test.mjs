// End-to-end: MCP resources, subscriptions and client roots, with the
// official SDK client on `build/burrow mcp` (stdio; the validators also over
// Streamable HTTP, and by raw fetch in MCP 2026-07-28).
//
//   cd test/e2e && npm ci && node --test resources.test.mjs
//   BURROW_RESOLVER=walk node --test resources.test.mjs

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport, getDefaultEnvironment } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  ResourceUpdatedNotificationSchema, ResourceListChangedNotificationSchema, ListRootsRequestSchema, ElicitRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { startHttp, waitFor } from "./http_helpers.mjs";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const REPO = path.resolve(HERE, "..", "..");
const BIN = path.resolve(process.env.BURROW_BIN || path.join(REPO, "build", "burrow"));
const T = { timeout: 60_000 };

let TMP;
let counter = 0;
before(() => { TMP = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "burrow-res-"))); });
after(() => { if (TMP) fs.rmSync(TMP, { recursive: true, force: true }); });

/** A case directory: ws/ (the root) with files, and burrow.yaml. */
function caseDir(files = {}, config = "roots: [ws]\npolicies: [default, secrets]\n") {
  const d = path.join(TMP, `case${++counter}`);
  fs.mkdirSync(path.join(d, "ws"), { recursive: true });
  for (const [rel, body] of Object.entries(files)) {
    const p = path.join(d, "ws", rel);
    fs.mkdirSync(path.dirname(p), { recursive: true });
    fs.writeFileSync(p, body);
  }
  fs.writeFileSync(path.join(d, "burrow.yaml"), config);
  return d;
}

function env() {
  const e = { ...getDefaultEnvironment() };
  for (const [k, v] of Object.entries(process.env)) if (k.startsWith("BURROW_")) e[k] = v;
  return e;
}

async function connect(d, { roots, elicit } = {}) {
  const transport = new StdioClientTransport({ command: BIN, args: ["mcp", "--config", path.join(d, "burrow.yaml")],
    env: env(), stderr: "pipe" });
  const stderr = [];
  transport.stderr?.on("data", (x) => stderr.push(String(x)));
  const client = new Client({ name: "burrow-resources-e2e", version: "1.0.0" },
    { capabilities: { ...(roots ? { roots: { listChanged: true } } : {}), ...(elicit ? { elicitation: {} } : {}) } });
  if (elicit) client.setRequestHandler(ElicitRequestSchema, elicit);
  const asked = [];
  if (roots) {
    client.setRequestHandler(ListRootsRequestSchema, async () => {
      asked.push(Date.now());
      return { roots: roots.current.map((p) => ({ uri: typeof p === "string" && p.startsWith("file:") ? p : "file://" + p })) };
    });
  }
  const updated = [], listChanged = [];
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => updated.push({ uri: n.params.uri, at: performance.now() }));
  client.setNotificationHandler(ResourceListChangedNotificationSchema, () => listChanged.push(performance.now()));
  await client.connect(transport);
  return { client, transport, stderr, updated, listChanged, asked };
}

const uri = (p) => "file://" + p.split("/").map(encodeURIComponent).join("/");
// a notification's wait polls often: its latency is measured at arrival
// (the handler's clock), the poll only notices it
const until = (cond, what) => waitFor(cond, what, 30_000, 5);

/** A refused resources/read: the JSON-RPC error's burrow code. */
async function readRefused(client, u) {
  try {
    await client.readResource({ uri: u });
  } catch (e) {
    return e.data?.code ?? `rpc ${e.code}`;
  }
  assert.fail(`resources/read ${u} was not refused`);
}

function rssKiB(pid) {
  const m = fs.readFileSync(`/proc/${pid}/status`, "utf8").match(/VmRSS:\s+(\d+) kB/);
  return Number(m[1]);
}

test("initialize advertises resources with subscribe and listChanged", T, async () => {
  const { client } = await connect(caseDir());
  try {
    assert.deepEqual(client.getServerCapabilities().resources, { subscribe: true, listChanged: true });
  } finally { await client.close(); }
});

test("resources/list pages through every file once, in path order, and leaves out denied files", T, async () => {
  const files = {};
  for (let i = 0; i < 250; i++) files[`d${i % 3}/f${String(i).padStart(3, "0")}.txt`] = `${i}\n`;
  files["credentials.json"] = "{}";
  files["keys/server.key"] = "secret";
  const d = caseDir(files);
  const { client } = await connect(d);
  try {
    const seen = [];
    let cursor, pages = 0;
    do {
      const page = await client.listResources(cursor ? { cursor } : {});
      assert.ok(page.resources.length <= 100, `a page holds at most 100 (got ${page.resources.length})`);
      seen.push(...page.resources);
      cursor = page.nextCursor;
      pages++;
    } while (cursor && pages < 10);
    assert.equal(seen.length, 250);
    assert.equal(pages, 3);
    const uris = seen.map((r) => r.uri);
    assert.equal(new Set(uris).size, 250, "no resource twice");
    assert.deepEqual(uris, [...uris].sort(), "path order");
    assert.ok(!uris.some((u) => u.includes("credentials") || u.endsWith(".key")), "denied files are not listed");
    const root = path.join(d, "ws");
    assert.equal(seen[0].uri, uri(path.join(root, "d0/f000.txt")));
    assert.equal(seen[0].name, "d0/f000.txt");
    assert.equal(seen[0].mimeType, "text/plain");
    await assert.rejects(client.listResources({ cursor: "garbage" }), /invalid cursor/);
  } finally { await client.close(); }
});

test("resources/templates/list gives file:// templates under each root", T, async () => {
  const d = caseDir();
  fs.mkdirSync(path.join(d, "docs"));
  fs.appendFileSync(path.join(d, "burrow.yaml"), "");
  fs.writeFileSync(path.join(d, "burrow.yaml"), "roots: [ws, docs:/docs:ro]\n");
  const { client } = await connect(d);
  try {
    const { resourceTemplates } = await client.listResourceTemplates();
    assert.deepEqual(resourceTemplates.map((t) => t.uriTemplate),
      [`file://${path.join(d, "ws")}/{+path}`, "file:///docs/{+path}"]);
  } finally { await client.close(); }
});

test("resources/read: text, blob, and every escape refused as read_file refuses it", T, async () => {
  const d = caseDir({ "a.txt": "hello\nworld\n", "sub/b.bin": Buffer.from([0, 1, 2, 255, 0]), "credentials.json": "{\"k\":1}" });
  const root = path.join(d, "ws");
  fs.writeFileSync(path.join(d, "outside.txt"), "outside\n");
  fs.symlinkSync(path.join(d, "outside.txt"), path.join(root, "link-out"));
  const { client } = await connect(d);
  try {
    const text = await client.readResource({ uri: uri(path.join(root, "a.txt")) });
    assert.equal(text.contents[0].text, "hello\nworld\n");
    assert.equal(text.contents[0].mimeType, "text/plain");
    const blob = await client.readResource({ uri: uri(path.join(root, "sub/b.bin")) });
    assert.equal(blob.contents[0].text, undefined);
    assert.deepEqual(Buffer.from(blob.contents[0].blob, "base64"), Buffer.from([0, 1, 2, 255, 0]));
    const cases = [
      [`file://${d}/outside.txt`, `${d}/outside.txt`],
      [`file://${root}/../outside.txt`, `${root}/../outside.txt`],
      [`file://${root}/%2e%2e/outside.txt`, `${root}/../outside.txt`],
      [`file://${root}/%2E%2E/%2E%2E${d}/outside.txt`, `${root}/../..${d}/outside.txt`],
      [uri(path.join(root, "link-out")), path.join(root, "link-out")],
      [uri(path.join(root, "credentials.json")), path.join(root, "credentials.json")],
      [uri(path.join(root, "missing.txt")), path.join(root, "missing.txt")],
    ];
    for (const [u, p] of cases) {
      const got = await readRefused(client, u);
      const direct = await client.callTool({ name: "read_file", arguments: { path: p } });
      assert.equal(direct.isError, true, `read_file ${p} is refused too`);
      assert.equal(got, direct._meta["burrow/code"], `${u}: the same refusal as read_file`);
    }
    for (const bad of ["http://x/a", "file://evil.host/etc/passwd", `file://${root}/a.txt?x`, `file://${root}/a%2`,
      `file://${root}/a%zz`, `file://${root}/a%00.txt`, "file:relative"]) {
      assert.match(await readRefused(client, bad), /rpc -32602/, bad);
    }
  } finally { await client.close(); }
});

test("resources/read over HTTP: _meta.version, not modified for the version held, the contents for a stale one, a denied file refused the same", T, async () => {
  const d = caseDir({ "a.txt": "hello\nworld\n", ".env": "API_KEY=s3cr3t\n" });
  const root = path.join(d, "ws");
  const sha = (s) => "sha256:" + createHash("sha256").update(s).digest("hex");
  const s = await startHttp(["--config", path.join(d, "burrow.yaml")]);
  const client = new Client({ name: "burrow-validators-e2e", version: "1.0.0" });
  const held = (v) => ({ "burrow/if_none_match": v });
  try {
    await client.connect(new StreamableHTTPClientTransport(new URL(s.url)));
    const u = uri(path.join(root, "a.txt"));
    const first = await client.readResource({ uri: u });
    assert.equal(first.contents[0].text, "hello\nworld\n");
    const version = first.contents[0]._meta?.version;
    assert.equal(version, sha("hello\nworld\n"));
    const same = await client.readResource({ uri: u, _meta: held(version) });
    assert.deepEqual(same.contents, []);
    assert.equal(same._meta?.["burrow/not_modified"], true);
    assert.equal(same._meta?.version, version);
    fs.writeFileSync(path.join(root, "a.txt"), "changed\n");
    const stale = await client.readResource({ uri: u, _meta: held(version) });
    assert.equal(stale.contents[0].text, "changed\n");
    assert.equal(stale.contents[0]._meta?.version, sha("changed\n"));
    assert.equal(stale._meta?.["burrow/not_modified"], undefined);
    // the tool: the same validator in the result's _meta, and if_none_match
    const tool = await client.callTool({ name: "read_file", arguments: { path: "a.txt", limit: 1 } });
    assert.equal(tool._meta?.["burrow/sha256"], sha("changed\n"));
    const again = await client.callTool({ name: "read_file", arguments: { path: "a.txt", if_none_match: sha("changed\n") } });
    assert.equal(again.structuredContent.not_modified, true);
    assert.match(again.content[0].text, /not modified/);
    assert.doesNotMatch(again.content[0].text, /changed\n/);
    // a denied file: the same refusal whatever version is presented
    const envU = uri(path.join(root, ".env"));
    const refusal = async (meta) => {
      try { await client.readResource({ uri: envU, ...(meta ? { _meta: meta } : {}) }); } catch (e) {
        return JSON.stringify({ code: e.code, message: e.message, data: e.data });
      }
      assert.fail(".env was read");
    };
    const plain = await refusal();
    assert.match(plain, /POLICY_DENIED/);
    assert.equal(await refusal(held(sha("API_KEY=s3cr3t\n"))), plain);
    assert.equal(await refusal(held(sha("other"))), plain);

    // MCP 2026-07-28 by raw fetch: no session, the version in the request's _meta
    const stateless = async (uriArg, meta = {}) => {
      const r = await fetch(s.url, { method: "POST", headers: { "content-type": "application/json",
        accept: "application/json, text/event-stream", "mcp-protocol-version": "2026-07-28",
        "mcp-method": "resources/read", "mcp-name": uriArg },
      body: JSON.stringify({ jsonrpc: "2.0", id: 7, method: "resources/read", params: { uri: uriArg, _meta: {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}, ...meta } } }) });
      const t = await r.text();
      const m = (r.headers.get("content-type") || "").includes("text/event-stream")
        ? JSON.parse(t.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5)).filter((x) => x.trim()).pop())
        : JSON.parse(t);
      return m;
    };
    const full = await stateless(u);
    assert.equal(full.result.contents[0]._meta.version, sha("changed\n"));
    const nm = await stateless(u, held(sha("changed\n")));
    assert.deepEqual(nm.result.contents, []);
    assert.equal(nm.result._meta["burrow/not_modified"], true);
    assert.equal(nm.result.resultType, "complete");
    const denied = JSON.stringify((await stateless(envU)).error);
    assert.match(denied, /POLICY_DENIED/);
    assert.equal(JSON.stringify((await stateless(envU, held(sha("API_KEY=s3cr3t\n")))).error), denied);
  } finally {
    await client.close();
    await s.stop();
  }
});

test("subscribe, change the file from outside: notifications/resources/updated within 500 ms", T, async () => {
  // each round changes a file of its own: a watch's first change goes out
  // at once, a later one within watch_interval_ms is held (and one append
  // can be two inotify events read apart, the second then held): a fresh
  // watch per round measures the at-once path, with no wait for an
  // interval to pass and no late notification of the round before
  const ROUNDS = 5;
  const files = { "watched.txt": "v1\n", "dir/x.txt": "x" };
  for (let round = 0; round < ROUNDS; round++) files[`round${round}.txt`] = "v1\n";
  const d = caseDir(files);
  const root = path.join(d, "ws");
  const { client, updated, listChanged } = await connect(d);
  try {
    const first = async (u, what, t0) => { // the first updated of u, within 500 ms of t0
      const hit = await until(() => updated.find((x) => x.uri === u), what);
      assert.ok(hit.at - t0 < 500, `${what}: ${Math.round(hit.at - t0)} ms`);
      return hit.at - t0;
    };
    for (let round = 0; round < ROUNDS; round++) await client.subscribeResource({ uri: uri(path.join(root, `round${round}.txt`)) });
    const lat = [];
    for (let round = 0; round < ROUNDS; round++) {
      const t0 = performance.now();
      fs.appendFileSync(path.join(root, `round${round}.txt`), `change ${round}\n`);
      lat.push(await first(uri(path.join(root, `round${round}.txt`)), `notifications/resources/updated (round ${round})`, t0));
    }
    console.log(`# change -> notifications/resources/updated: ${lat.map((x) => x.toFixed(1)).join(", ")} ms`);
    // an atomic replace (a new inode under the name) is seen too
    const u = uri(path.join(root, "watched.txt"));
    await client.subscribeResource({ uri: u });
    let t0 = performance.now();
    fs.writeFileSync(path.join(root, "tmp.new"), "v2\n");
    fs.renameSync(path.join(root, "tmp.new"), path.join(root, "watched.txt"));
    await first(u, "updated after a replace", t0);
    // a folder: created and removed files are a list change
    await client.subscribeResource({ uri: uri(path.join(root, "dir")) });
    const l0 = listChanged.length;
    t0 = performance.now();
    fs.writeFileSync(path.join(root, "dir/new.txt"), "new");
    const at = await until(() => listChanged[l0], "notifications/resources/list_changed");
    assert.ok(at - t0 < 500, `list_changed: ${Math.round(at - t0)} ms`);
  } finally { await client.close(); }
});

// Silence after an unsubscribe, shown by order rather than by waiting: a
// change to the unsubscribed file, then one to a file still subscribed;
// once the second's notification and a ping after it are in, whatever the
// server sent for the first would be in too (one output, in order). With
// watch_interval_ms 0 no change is held back for an interval, so the
// first change's notification could not come after the second's.
test("unsubscribed: no notification after the answer to resources/unsubscribe", T, async () => {
  const d = caseDir({ "gone.txt": "v1\n", "kept.txt": "k1\n" }, "roots: [ws]\ncaps: {watch_interval_ms: 0}\n");
  const root = path.join(d, "ws");
  const { client, updated } = await connect(d);
  try {
    const gone = uri(path.join(root, "gone.txt")), kept = uri(path.join(root, "kept.txt"));
    const heard = (u) => updated.filter((x) => x.uri === u).length;
    await client.subscribeResource({ uri: gone });
    await client.subscribeResource({ uri: kept });
    fs.appendFileSync(path.join(root, "gone.txt"), "v2\n"); // heard while subscribed
    await until(() => heard(gone) > 0, "updated while subscribed");
    await client.unsubscribeResource({ uri: gone });
    const n = heard(gone); // sent before the answer: in before it
    fs.appendFileSync(path.join(root, "gone.txt"), "after\n");
    fs.appendFileSync(path.join(root, "kept.txt"), "k2\n");
    await until(() => heard(kept) > 0, "updated of the file still subscribed");
    await client.ping();
    assert.equal(heard(gone), n, "no notification after unsubscribe");
  } finally { await client.close(); }
});

// An operator resource made from a file says so (watch): subscribing to
// it watches that file, judged as a read as a file:// subscription is, and
// a change to the file is reported as the operator resource's URI; a
// template fills its variables into the path; one that watches nothing is
// taken and never reported; a watch on a denied file is refused.
test("operator resources: a subscription watches what the resource is made from", T, async () => {
  const d = caseDir({ "todo.md": "- a\n", "tickets/7.json": "{}\n", "credentials.json": "{}" },
    "roots: [ws]\npolicies: [default, secrets]\ncaps: {watch_interval_ms: 0}\n"
    + "resources: [todo.lua, ticket.lua, quiet.lua, secret.lua, doc.lua]\n");
  const res = (name, body) => fs.writeFileSync(path.join(d, name), body);
  const READ = "read = function() return { text = 'x' } end";
  res("todo.lua", `return { uri = "notes://todo", name = "todo", watch = "todo.md", ${READ} }`);
  res("ticket.lua", `return { uri_template = "ticket://{id}", name = "ticket", watch = "tickets/{id}.json", ${READ} }`);
  res("quiet.lua", `return { uri = "notes://quiet", name = "quiet", ${READ} }`);
  res("secret.lua", `return { uri = "notes://secret", name = "secret", watch = "credentials.json", ${READ} }`);
  res("doc.lua", `return { uri_template = "doc://{+p}", name = "doc", watch = "{+p}", ${READ} }`);
  fs.writeFileSync(path.join(d, "outside.txt"), "outside\n");
  const root = path.join(d, "ws");
  const { client, updated } = await connect(d);
  try {
    const heard = (u) => updated.filter((x) => x.uri === u).length;
    await client.subscribeResource({ uri: "notes://todo" });
    await client.subscribeResource({ uri: "ticket://7" });
    await client.subscribeResource({ uri: "notes://quiet" });
    let code;
    try { await client.subscribeResource({ uri: "notes://secret" }); } catch (e) { code = e.data?.code; }
    assert.equal(code, "POLICY_DENIED", "a watch judged as a read");
    for (const [u, want] of [["doc://../outside.txt", "OUTSIDE_ROOT"], ["doc://" + path.join(d, "outside.txt"), "OUTSIDE_ROOT"]]) {
      code = undefined;
      try { await client.subscribeResource({ uri: u }); } catch (e) { code = e.data?.code; }
      assert.equal(code, want, `${u}: a template's variables in the watch stay beneath the roots`);
    }
    try { await client.subscribeResource({ uri: "nothing://here" }); assert.fail("an unknown URI was taken"); }
    catch (e) { assert.equal(e.code, -32602); }
    fs.appendFileSync(path.join(root, "todo.md"), "- b\n");
    await until(() => heard("notes://todo") > 0, "updated for notes://todo");
    fs.writeFileSync(path.join(root, "tickets/7.json"), "{\"state\": \"done\"}\n");
    await until(() => heard("ticket://7") > 0, "updated for ticket://7");
    await client.unsubscribeResource({ uri: "notes://todo" });
    const n = heard("notes://todo");
    fs.appendFileSync(path.join(root, "todo.md"), "- c\n");
    fs.writeFileSync(path.join(root, "tickets/7.json"), "{}\n");
    await until(() => heard("ticket://7") > 1, "updated again for ticket://7");
    await client.ping();
    assert.equal(heard("notes://todo"), n, "no notification after unsubscribe");
    assert.equal(heard("notes://quiet"), 0);
    await client.unsubscribeResource({ uri: "notes://quiet" });
  } finally { await client.close(); }
});

test("10,000 changes are coalesced: few notifications, RSS flat", T, async () => {
  const d = caseDir({ "hot.txt": "" });
  const root = path.join(d, "ws");
  const { client, transport, updated } = await connect(d);
  try {
    const u = uri(path.join(root, "hot.txt"));
    await client.subscribeResource({ uri: u });
    const pid = transport.pid;
    const before = rssKiB(pid);
    const t0 = performance.now();
    // each its own open, write, close: the kernel merges only identical
    // events in a row, so these are 20,000 events (past the default inotify
    // queue of 16,384: an overflow the watch must survive)
    for (let i = 0; i < 10000; i++) fs.appendFileSync(path.join(root, "hot.txt"), "x");
    const secs = (performance.now() - t0) / 1000;
    // a state, not a time: the changes were reported; then the unsubscribe
    // ends the count (what the server sent before its answer is all in)
    await until(() => updated.some((x) => x.uri === u), "notifications/resources/updated of the flood");
    await client.unsubscribeResource({ uri: u });
    const after = rssKiB(pid);
    const got = updated.filter((x) => x.uri === u).length;
    // at most one per 100 ms interval while the changes ran, plus the last
    const bound = Math.ceil(secs / 0.1) + 2;
    console.log(`# 10,000 writes in ${secs.toFixed(3)} s -> ${got} notifications (bound ${bound}); RSS ${before} -> ${after} KiB`);
    assert.ok(got >= 1 && got <= bound, `${got} notifications for 10,000 writes`);
    assert.ok(after - before < 4096, `RSS grew by ${after - before} KiB`);
    await client.ping(); // still serving
  } finally { await client.close(); }
});

test("a denied file, a link out, a missing file: subscription refused", T, async () => {
  const d = caseDir({ "credentials.json": "{}", "ok.txt": "ok" });
  const root = path.join(d, "ws");
  fs.writeFileSync(path.join(d, "outside.txt"), "outside\n");
  fs.symlinkSync(path.join(d, "outside.txt"), path.join(root, "link-out"));
  const { client } = await connect(d);
  try {
    for (const [p, want] of [["credentials.json", "POLICY_DENIED"], ["link-out", "OUTSIDE_ROOT"], ["nope.txt", "ENOENT"]]) {
      let code;
      try { await client.subscribeResource({ uri: uri(path.join(root, p)) }); } catch (e) { code = e.data?.code; }
      assert.equal(code, want, p);
    }
    await client.subscribeResource({ uri: uri(path.join(d, "..", path.basename(d), "ws", "ok.txt")) });
  } finally { await client.close(); }
});

test("client roots: asked after initialize; with roots_from_client, exactly those folders are served", T, async () => {
  const d = caseDir({ "a/one.txt": "1", "b/two.txt": "2", "top.txt": "t" },
    "roots: [ws]\nroots_from_client: true\n");
  const root = path.join(d, "ws");
  fs.symlinkSync(path.join(root, "b"), path.join(root, "a", "to-b"));
  const roots = { current: [path.join(root, "a"), "/etc", "file://host/x"] };
  const { client, asked, listChanged, stderr } = await connect(d, { roots });
  try {
    await until(() => asked.length === 1, "roots/list");
    await until(() => listChanged.length >= 1, "list_changed after the roots");
    const inA = await client.callTool({ name: "read_file", arguments: { path: path.join(root, "a/one.txt") } });
    assert.ok(!inA.isError);
    for (const p of ["top.txt", path.join(root, "b/two.txt"), path.join(root, "a/to-b/two.txt"), path.join(root, "a/../top.txt")]) {
      const r = await client.callTool({ name: "read_file", arguments: { path: p } });
      assert.equal(r._meta?.["burrow/code"], "OUTSIDE_ROOT", p);
    }
    const list = await client.listResources();
    assert.deepEqual(list.resources.map((r) => r.name), ["one.txt"]);
    // stderr is another pipe than the answers': its lines may be read after them
    await until(() => /client root file:\/\/\/etc ignored/.test(stderr.join("")), "the /etc root's log line");
    await until(() => /client root file:\/\/host\/x ignored/.test(stderr.join("")), "the host root's log line");
    // the client's roots change: asked again, the new set is served
    roots.current = [path.join(root, "b")];
    const n = listChanged.length;
    await client.sendRootsListChanged();
    await until(() => asked.length === 2 && listChanged.length > n, "roots asked again");
    const inB = await client.callTool({ name: "read_file", arguments: { path: path.join(root, "b/two.txt") } });
    assert.ok(!inB.isError);
    const nowA = await client.callTool({ name: "read_file", arguments: { path: path.join(root, "a/one.txt") } });
    assert.equal(nowA._meta?.["burrow/code"], "OUTSIDE_ROOT");
  } finally { await client.close(); }
});

test("client roots without roots_from_client: asked, logged, the configured roots served", T, async () => {
  const d = caseDir({ "a/one.txt": "1", "top.txt": "t" }, "roots: [ws]\n");
  const roots = { current: [path.join(d, "ws", "a")] };
  const { client, asked, stderr } = await connect(d, { roots });
  try {
    await until(() => asked.length === 1, "roots/list");
    await until(() => /roots_from_client is off/.test(stderr.join("")), "the log line");
    const r = await client.callTool({ name: "read_file", arguments: { path: "top.txt" } });
    assert.ok(!r.isError);
  } finally { await client.close(); }
});

test("changes are notified while the server waits for the client (an approval)", T, async () => {
  const d = caseDir({ "w.txt": "1\n", "ask.lua": `return { name = "ask", check = function(req)
    if req.operation == "write" then return "ask", "writes need a yes" end
    return "allow" end }` }, "roots: [ws]\npolicies: [ws/ask.lua]\n");
  const root = path.join(d, "ws");
  let conn;
  const elicit = async () => {
    // the server is waiting for this answer: a change now must still reach us
    // (it cannot come after the answer: this handler waits for it first)
    const n = conn.updated.length, t0 = performance.now();
    fs.appendFileSync(path.join(root, "w.txt"), "during\n");
    const hit = await until(() => conn.updated[n], "updated during the approval");
    assert.ok(hit.at - t0 < 500, `updated ${Math.round(hit.at - t0)} ms after the change`);
    return { action: "accept", content: { approve: true } };
  };
  conn = await connect(d, { elicit });
  try {
    await conn.client.subscribeResource({ uri: uri(path.join(root, "w.txt")) });
    const r = await conn.client.callTool({ name: "write_file", arguments: { path: "other.txt", content: "x" } });
    assert.ok(!r.isError, JSON.stringify(r));
    await conn.client.ping();
  } finally { await conn.client.close(); }
});

test("a held change goes out while the client keeps sending requests", T, async () => {
  const d = caseDir({ "busy.txt": "0\n" });
  const root = path.join(d, "ws");
  const { client, updated } = await connect(d);
  try {
    const u = uri(path.join(root, "busy.txt"));
    await client.subscribeResource({ uri: u });
    // a fresh watch: its first change goes out at once
    let t0 = performance.now();
    fs.appendFileSync(path.join(root, "busy.txt"), "a\n");
    const first = await until(() => updated[0], "the first change");
    assert.ok(first.at - t0 < 500, `the first change: ${Math.round(first.at - t0)} ms`);
    const n = updated.length;
    fs.appendFileSync(path.join(root, "busy.txt"), "b\n"); // within the interval: held
    t0 = performance.now();
    while (updated.length === n && performance.now() - t0 < 1000) await client.ping(); // no pause between requests
    assert.ok(updated.length > n, "the held change was delivered");
    assert.ok(updated[n].at - t0 < 500, `${Math.round(updated[n].at - t0)} ms`);
  } finally { await client.close(); }
});
