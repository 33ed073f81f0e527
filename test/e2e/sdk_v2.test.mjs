// Issue 27: the official TypeScript SDK's v2 client (@modelcontextprotocol/client,
// pinned in package-lock.json), which implements MCP 2026-07-28, negotiates
// that revision with burrow over stdio (its server/discover probe) and over
// HTTP, and runs the read, grep, edit and approval flows on it: a policy's
// "ask" comes back as input_required, the SDK puts the form to its
// elicitation handler and retries with the answer and the signed
// requestState. The 1.x SDK clients of the other tests speak the session
// revisions unchanged.
//
//   cd test/e2e && npm ci && node --test sdk_v2.test.mjs

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { BIN, startHttp } from "./http_helpers.mjs";

const T = { timeout: 90_000 };
let TMP;
let counter = 0;
const servers = [];

before(() => { TMP = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "burrow-sdkv2-"))); });
after(async () => {
  for (const s of servers) await s.stop();
  if (TMP) fs.rmSync(TMP, { recursive: true, force: true });
});

function setup() {
  const dir = path.join(TMP, `s${++counter}`);
  fs.mkdirSync(path.join(dir, "ws", "src"), { recursive: true });
  fs.writeFileSync(path.join(dir, "ws", "notes.txt"), "alpha\nbeta\ngamma\n");
  fs.writeFileSync(path.join(dir, "ws", "src", "main.c"), "int main(void) { return 0; }\n");
  fs.writeFileSync(path.join(dir, "ask.lua"), `return { name = "hold", check = function(r)
  if r.operation == "write" and r.path:match("^held/") then return "ask", "held by the test" end
  return "allow" end }\n`);
  fs.writeFileSync(path.join(dir, "burrow.yaml"), "roots: [ws]\npolicies: [./ask.lua]\n");
  return dir;
}

const text = (r) => r.content.map((b) => b.text).join("");

// The user's side: held/yes.txt approved, anything else refused.
let asked;
function approver(c) {
  asked = [];
  c.setRequestHandler("elicitation/create", async (req) => {
    const m = /(held\/\S+)\?/.exec(req.params.message);
    asked.push(m && m[1]);
    return { action: "accept", content: { approve: m && m[1] === "held/yes.txt" } };
  });
}

async function flows(c, dir) {
  assert.equal(c.getNegotiatedProtocolVersion(), "2026-07-28");
  assert.equal(c.getServerVersion().name, "burrow");
  const tools = await c.listTools();
  assert.ok(tools.tools.some((t) => t.name === "grep"));
  const read = await c.callTool({ name: "read_file", arguments: { path: "notes.txt" } });
  assert.equal(read.isError, undefined, text(read));
  assert.match(text(read), /beta/);
  const grep = await c.callTool({ name: "grep", arguments: { pattern: "main" } });
  assert.equal(grep.isError, undefined, text(grep));
  assert.deepEqual(grep.structuredContent.files, ["src/main.c"]);
  const edit = await c.callTool({ name: "edit_file", arguments: { path: "notes.txt", old_text: "beta", new_text: "BETA" } });
  assert.equal(edit.isError, undefined, text(edit));
  assert.equal(fs.readFileSync(path.join(dir, "ws", "notes.txt"), "utf8"), "alpha\nBETA\ngamma\n");
  const missing = await c.callTool({ name: "read_file", arguments: { path: "nope.txt" } });
  assert.equal(missing.isError, true);
  assert.equal(missing._meta["burrow/code"], "ENOENT");
  const yes = await c.callTool({ name: "write_file", arguments: { path: "held/yes.txt", content: "y\n" } });
  assert.equal(yes.isError, undefined, text(yes));
  assert.equal(fs.readFileSync(path.join(dir, "ws", "held", "yes.txt"), "utf8"), "y\n");
  const no = await c.callTool({ name: "write_file", arguments: { path: "held/no.txt", content: "n\n" } });
  assert.equal(no.isError, true);
  assert.equal(no._meta["burrow/code"], "POLICY_DENIED");
  assert.match(text(no), /the user said no/);
  assert.equal(fs.existsSync(path.join(dir, "ws", "held", "no.txt")), false);
  assert.deepEqual(asked.sort(), ["held/no.txt", "held/yes.txt"], "each write was asked about once");
  const res = await c.listResources();
  assert.ok(res.resources.some((r) => r.uri.endsWith("/notes.txt")));
}

test("the v2 SDK client negotiates 2026-07-28 over stdio and reads, greps and edits", T, async () => {
  const dir = setup();
  const c = new Client({ name: "v2-stdio", version: "1" }, { capabilities: { elicitation: {} }, versionNegotiation: { mode: "auto" } });
  approver(c);
  await c.connect(new StdioClientTransport({ command: BIN, args: ["mcp", "--config", path.join(dir, "burrow.yaml")], stderr: "ignore" }));
  await flows(c, dir);
  await c.close();
});

test("the v2 SDK client negotiates 2026-07-28 over HTTP (no session) and reads, greps and edits", T, async () => {
  const dir = setup();
  const s = await startHttp(["--config", path.join(dir, "burrow.yaml")]);
  servers.push(s);
  const c = new Client({ name: "v2-http", version: "1" }, { capabilities: { elicitation: {} }, versionNegotiation: { mode: "auto" } });
  approver(c);
  const t = new StreamableHTTPClientTransport(new URL(s.url));
  await c.connect(t);
  await flows(c, dir);
  assert.equal(t.sessionId, undefined, "no session was made");
  await c.close();
});
