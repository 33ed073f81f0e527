// The resource operations strawman (io.modelcontextprotocol/resource-operations:
// resources/stat, create, update with ifMatch, delete) against `build/burrow
// mcp`: the official v2 client's low-level request() at 2026-07-28 over stdio
// and Streamable HTTP, and the v1 client in a 2025-11-25 session. Each
// operation is the tool that does the same thing (write_file, remove, stat),
// so a policy that denies write_file denies the update, protected paths stay
// protected, subscribers and listens hear the write, and undo_edit undoes it.
//
//   cd test/e2e && npm ci && node --test resource_ops.test.mjs

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport as StdioV1 } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ResourceUpdatedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { BIN, startHttp, waitFor } from "./http_helpers.mjs";

const T = { timeout: 90_000 };
const EXT = "io.modelcontextprotocol/resource-operations";
const SUB = "io.modelcontextprotocol/subscriptionId";
let TMP;
let counter = 0;
const servers = [];

before(() => { TMP = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "burrow-resops-"))); });
after(async () => {
  for (const s of servers) await s.stop();
  if (TMP) fs.rmSync(TMP, { recursive: true, force: true });
});

// A workspace with a note, a folder write_file may not touch (a check()
// policy naming the tool) and the default policies (protected is on).
function setup() {
  const dir = path.join(TMP, `s${++counter}`);
  fs.mkdirSync(path.join(dir, "ws", "locked"), { recursive: true });
  fs.writeFileSync(path.join(dir, "ws", "notes.md"), "# Plan\n");
  fs.writeFileSync(path.join(dir, "ws", "locked", "keep.txt"), "kept\n");
  fs.writeFileSync(path.join(dir, "nowrite.lua"), `return { name = "nowrite", check = function(r)
  if r.tool == "write_file" and r.path:find("/locked/", 1, true) then return "deny", "write_file may not touch locked/" end
  return "allow" end }\n`);
  fs.writeFileSync(path.join(dir, "burrow.yaml"), "roots: [ws]\npolicies: [default, ./nowrite.lua]\n");
  return dir;
}
const file = (dir, rel) => path.join(dir, "ws", rel);
const uri = (dir, rel) => "file://" + file(dir, rel);

// v2: any result (the methods are the extension's, not the SDK's)
const ANY = { "~standard": { version: 1, vendor: "burrow-test", validate: (value) => ({ value }) } };
// the JSON-RPC error a request got (the SDK throws it)
async function refused(p) {
  try { await p; } catch (e) { return e; }
  assert.fail("the request was expected to fail");
}

// The strawman's conflict cases and burrow's rules, on a connected client
// whose request(method, params) sends one request.
async function operations(request, dir) {
  const u = uri(dir, "notes.md");
  const st = await request("resources/stat", { uri: u });
  assert.equal(st.resource.uri, u);
  assert.equal(st.resource.mimeType, "text/markdown");
  assert.equal(st.resource.size, 7);
  assert.equal(typeof st.version, "string");

  // a read carries the same version under the strawman's key, and a read
  // presenting it gets "not modified"
  const read = await request("resources/read", { uri: u });
  assert.equal(read.contents[0]._meta["io.modelcontextprotocol/resource-version"], st.version);
  const again = await request("resources/read", { uri: u, _meta: { "burrow/if_none_match": st.version } });
  assert.deepEqual(again.contents, []);
  assert.equal(again._meta["burrow/not_modified"], true);

  // update with the current version: written, a new version, the change set
  const up = await request("resources/update", { uri: u, contents: { uri: u, text: "# Plan\n- ship\n" }, ifMatch: st.version });
  assert.notEqual(up.version, st.version);
  assert.deepEqual(up.changes, [{ uri: u, effect: "updated", previousVersion: st.version, version: up.version }]);
  assert.equal(fs.readFileSync(file(dir, "notes.md"), "utf8"), "# Plan\n- ship\n");

  // the second writer with the stale version: refused with the current one, nothing written
  const stale = await refused(request("resources/update", { uri: u, contents: { uri: u, text: "# Other\n" }, ifMatch: st.version }));
  assert.equal(stale.code, -32010);
  assert.equal(stale.data.reason, "versionMismatch");
  assert.equal(stale.data.currentVersion, up.version);
  assert.equal(fs.readFileSync(file(dir, "notes.md"), "utf8"), "# Plan\n- ship\n");

  // create on an existing file: alreadyExists, its version, nothing written
  const taken = await refused(request("resources/create", { uri: u, contents: { uri: u, text: "x" } }));
  assert.equal(taken.code, -32010);
  assert.equal(taken.data.reason, "alreadyExists");
  assert.equal(taken.data.currentVersion, up.version);
  assert.equal(fs.readFileSync(file(dir, "notes.md"), "utf8"), "# Plan\n- ship\n");

  // create if absent
  const nu = uri(dir, "new/idea.txt");
  const made = await request("resources/create", { uri: nu, contents: { uri: nu, text: "idea\n" } });
  assert.equal(made.changes[0].effect, "created");
  assert.equal(fs.readFileSync(file(dir, "new/idea.txt"), "utf8"), "idea\n");

  // delete with a stale ifMatch: refused, the file stays; with the current one: gone
  const del = await refused(request("resources/delete", { uri: u, ifMatch: st.version }));
  assert.equal(del.code, -32010);
  assert.equal(del.data.reason, "versionMismatch");
  assert.equal(del.data.currentVersion, up.version);
  assert.ok(fs.existsSync(file(dir, "notes.md")));
  const gone = await request("resources/delete", { uri: nu, ifMatch: made.version });
  assert.deepEqual(gone.changes, [{ uri: nu, effect: "deleted", previousVersion: made.version }]);
  assert.equal(fs.existsSync(file(dir, "new/idea.txt")), false);

  // a policy that denies write_file on a path denies the update and the create there
  const lu = uri(dir, "locked/keep.txt");
  const lst = await request("resources/stat", { uri: lu });
  const denied = await refused(request("resources/update", { uri: lu, contents: { uri: lu, text: "changed\n" }, ifMatch: lst.version }));
  assert.equal(denied.code, -32011);
  assert.equal(denied.data.code, "POLICY_DENIED");
  assert.match(denied.message, /locked/);
  assert.equal(fs.readFileSync(file(dir, "locked/keep.txt"), "utf8"), "kept\n");
  const lnew = uri(dir, "locked/new.txt");
  const denied2 = await refused(request("resources/create", { uri: lnew, contents: { uri: lnew, text: "n" } }));
  assert.equal(denied2.data.code, "POLICY_DENIED");
  assert.equal(fs.existsSync(file(dir, "locked/new.txt")), false);

  // protected paths (git hooks, shell start-up files) are refused as write_file refuses them
  for (const rel of [".git/hooks/pre-commit", ".bashrc"]) {
    const pu = uri(dir, rel);
    const p = await refused(request("resources/create", { uri: pu, contents: { uri: pu, text: "echo pwned\n" } }));
    assert.equal(p.code, -32011, rel);
    assert.equal(p.data.code, "POLICY_DENIED", rel);
    assert.equal(fs.existsSync(file(dir, rel)), false, rel);
  }

  // the update lands in undo as write_file's does
  return { u, before: "# Plan\n" };
}

test("v2 client at 2026-07-28 over stdio: conflicts, policies, a listen hears the write, undo", T, async () => {
  const dir = setup();
  const c = new Client({ name: "resops-stdio", version: "1" }, { versionNegotiation: { mode: "auto" } });
  await c.connect(new StdioClientTransport({ command: BIN, args: ["mcp", "--config", path.join(dir, "burrow.yaml")], stderr: "ignore" }));
  assert.equal(c.getNegotiatedProtocolVersion(), "2026-07-28");
  assert.deepEqual(c.getServerCapabilities().extensions[EXT], { directoryRead: false });
  const request = (method, params) => c.request({ method, params }, ANY);

  // a listen on the note hears the resource write
  const heard = [];
  c.setNotificationHandler("notifications/resources/updated", (n) => heard.push(n.params));
  const l = await c.listen({ resourceSubscriptions: [uri(dir, "notes.md")] });
  assert.deepEqual(l.honoredFilter, { resourceSubscriptions: [uri(dir, "notes.md")] });

  const { u, before: was } = await operations(request, dir);
  await waitFor(() => heard.some((n) => n.uri === u && typeof n._meta?.[SUB] === "string"), "the listen's update of notes.md");

  const undo = await c.callTool({ name: "undo_edit", arguments: { path: "notes.md" } });
  assert.equal(undo.isError, undefined, JSON.stringify(undo));
  assert.equal(fs.readFileSync(file(dir, "notes.md"), "utf8"), was);
  await c.close();
});

test("v2 client at 2026-07-28 over HTTP (no session): the same operations and refusals", T, async () => {
  const dir = setup();
  const s = await startHttp(["--config", path.join(dir, "burrow.yaml")]);
  servers.push(s);
  const c = new Client({ name: "resops-http", version: "1" }, { versionNegotiation: { mode: "auto" } });
  const t = new StreamableHTTPClientTransport(new URL(s.url));
  await c.connect(t);
  assert.equal(c.getNegotiatedProtocolVersion(), "2026-07-28");
  assert.deepEqual(c.getServerCapabilities().extensions[EXT], { directoryRead: false });
  await operations((method, params) => c.request({ method, params }, ANY), dir);
  assert.equal(t.sessionId, undefined, "no session was made");
  await c.close();
});

test("v1 client in a 2025-11-25 session: the extension as experimental, a subscriber hears the write", T, async () => {
  const dir = setup();
  const c = new ClientV1({ name: "resops-v1", version: "1" }, { capabilities: {} });
  await c.connect(new StdioV1({ command: BIN, args: ["mcp", "--config", path.join(dir, "burrow.yaml")], stderr: "ignore" }));
  assert.equal(c.getServerCapabilities().experimental[EXT].directoryRead, false);
  assert.equal(c.getServerCapabilities().extensions[EXT].directoryRead, false);
  const heard = [];
  c.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => heard.push(n.params.uri));
  const u = uri(dir, "notes.md");
  await c.subscribeResource({ uri: u });
  await operations((method, params) => c.request({ method, params }, z.looseObject({})), dir);
  await waitFor(() => heard.includes(u), "the subscriber's update of notes.md");
  await c.close();
});

test("raw HTTP at 2026-07-28: no Mcp-Name needed for the operations; one that names another URI is refused before anything runs", T, async () => {
  const dir = setup();
  const s = await startHttp(["--config", path.join(dir, "burrow.yaml")]);
  servers.push(s);
  const u = uri(dir, "notes.md");
  let id = 0;
  const post = async (method, params, name) => {
    const headers = { "content-type": "application/json", accept: "application/json, text/event-stream",
      "mcp-protocol-version": "2026-07-28", "mcp-method": method, ...(name ? { "mcp-name": name } : {}) };
    const body = JSON.stringify({ jsonrpc: "2.0", id: ++id, method, params: { ...params, _meta: {
      "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {} } } });
    const r = await fetch(s.url, { method: "POST", headers, body });
    const t = await r.text();
    if (!t) assert.fail(`${method}: HTTP ${r.status} with no body`);
    const m = t.startsWith("{") ? JSON.parse(t) : t.split("\n").filter((l) => l.startsWith("data:") && l.slice(5).trim())
      .map((l) => JSON.parse(l.slice(5))).find((x) => x.id === id);
    return { status: r.status, msg: m };
  };
  const st = await post("resources/stat", { uri: u });
  assert.equal(st.status, 200);
  assert.equal(st.msg.result.resultType, "complete");
  assert.equal(st.msg.result.ttlMs, 0);
  const named = await post("resources/stat", { uri: u }, u);
  assert.equal(named.msg.result.version, st.msg.result.version);
  const other = await post("resources/update", { uri: u, contents: { uri: u, text: "x" }, ifMatch: st.msg.result.version },
    uri(dir, "locked/keep.txt"));
  assert.equal(other.status, 400);
  assert.equal(other.msg.error.code, -32020);
  assert.equal(fs.readFileSync(file(dir, "notes.md"), "utf8"), "# Plan\n");
});
