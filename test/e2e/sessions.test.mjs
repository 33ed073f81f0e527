// Issue 26: nothing one connection sets lives where another sees it. Two
// sessions of one tenant on one HTTP worker share the tenant's workspace:
// the client roots one names (roots_from_client), its log level and its
// pack state (claude_code's read-before-write record) stay its own.
//
//   cd test/e2e && npm ci && node --test sessions.test.mjs

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ListRootsRequestSchema, LoggingMessageNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { startHttp, waitFor } from "./http_helpers.mjs";

const T = { timeout: 60_000 };
let TMP;
let counter = 0;
const servers = [];

before(() => { TMP = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "burrow-sessions-"))); });
after(async () => {
  for (const s of servers) await s.stop();
  if (TMP) fs.rmSync(TMP, { recursive: true, force: true });
});

function setup(yaml) {
  const dir = path.join(TMP, `s${++counter}`);
  for (const [rel, body] of Object.entries({ "ws/pub/p.txt": "public\n", "ws/private/s.txt": "private\n", "ws/a.txt": "a\n" })) {
    fs.mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
    fs.writeFileSync(path.join(dir, rel), body);
  }
  const config = path.join(dir, "burrow.yaml");
  fs.writeFileSync(config, yaml);
  return [dir, config];
}

// Wait for a state (a line in the server's log), never for a time.
const until = (pred, what) => waitFor(pred, what);

const code = (r) => r._meta?.["burrow/code"];

test("one session's client roots neither widen nor empty another's (one worker, one tenant)", T, async () => {
  const [dir, config] = setup("roots: [ws]\nroots_from_client: true\nhttp: {workers: 1}\n");
  const s = await startHttp(["--config", config]);
  servers.push(s);
  const rootsClient = async (uris) => {
    const c = new Client({ name: "roots", version: "1" }, { capabilities: { roots: { listChanged: true } } });
    c.setRequestHandler(ListRootsRequestSchema, async () => ({ roots: uris.map((u) => ({ uri: `file://${u}` })) }));
    await c.connect(new StreamableHTTPClientTransport(new URL(s.url)));
    return c;
  };
  const served = () => (s.stderr().match(/serving the client's roots/g) || []).length;
  const a = await rootsClient([path.join(dir, "ws", "pub")]);
  await until(() => served() >= 1, "session A's roots applied");
  const before = await a.callTool({ name: "read_file", arguments: { path: path.join(dir, "ws", "private", "s.txt") } });
  assert.equal(code(before), "OUTSIDE_ROOT", JSON.stringify(before));
  const b = await rootsClient([path.join(dir, "ws")]); // the whole tree
  await until(() => served() >= 2, "session B's roots applied");
  const bRead = await b.callTool({ name: "read_file", arguments: { path: path.join(dir, "ws", "private", "s.txt") } });
  assert.equal(bRead.isError, undefined, JSON.stringify(bRead));
  const aRead = await a.callTool({ name: "read_file", arguments: { path: path.join(dir, "ws", "private", "s.txt") } });
  assert.equal(code(aRead), "OUTSIDE_ROOT", `B's roots widened A's scope: ${JSON.stringify(aRead)}`);
  const aPub = await a.callTool({ name: "read_file", arguments: { path: path.join(dir, "ws", "pub", "p.txt") } });
  assert.equal(aPub.isError, undefined, JSON.stringify(aPub));
  const c = await rootsClient([]); // no roots: that session serves nothing
  await until(() => served() >= 3, "session C's roots applied");
  const aAgain = await a.callTool({ name: "read_file", arguments: { path: path.join(dir, "ws", "pub", "p.txt") } });
  assert.equal(aAgain.isError, undefined, `C's empty list emptied A's scope: ${JSON.stringify(aAgain)}`);
  await Promise.all([a.close(), b.close(), c.close()]);
});

test("one session's claude_code Read does not let another session Edit; log levels stay apart", T, async () => {
  const [dir, config] = setup("roots: [ws]\npack: claude_code\nhttp: {workers: 1}\n");
  const s = await startHttp(["--config", config]);
  servers.push(s);
  const connect = async () => {
    const c = new Client({ name: "cc", version: "1" });
    await c.connect(new StreamableHTTPClientTransport(new URL(s.url)));
    return c;
  };
  const a = await connect();
  const b = await connect();
  const file = path.join(dir, "ws", "a.txt");
  const read = await b.callTool({ name: "Read", arguments: { file_path: file } });
  assert.equal(read.isError, undefined, JSON.stringify(read));
  const edit = await a.callTool({ name: "Edit", arguments: { file_path: file, old_string: "a", new_string: "A" } });
  assert.equal(edit.isError, true, `A edited on B's read: ${JSON.stringify(edit)}`);
  assert.match(edit.content[0].text, /has not been read yet/);
  assert.equal(fs.readFileSync(file, "utf8"), "a\n");
  // B asks for debug logs; A asked for nothing: A hears nothing of its
  // calls (a grep that skips a binary file is logged at "info")
  fs.writeFileSync(path.join(dir, "ws", "bin.dat"), Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d]), Buffer.from("IHDR\0\0\0\x01a\n", "latin1")]));
  const heard = { a: 0, b: 0 };
  a.setNotificationHandler(LoggingMessageNotificationSchema, () => { heard.a++; });
  b.setNotificationHandler(LoggingMessageNotificationSchema, () => { heard.b++; });
  await b.setLoggingLevel("debug");
  await b.callTool({ name: "Grep", arguments: { pattern: "a" } });
  await a.callTool({ name: "Grep", arguments: { pattern: "a" } });
  await until(() => heard.b > 0, "B's log of its call");
  assert.equal(heard.a, 0, "A got log messages it never asked for");
  await Promise.all([a.close(), b.close()]);
});
